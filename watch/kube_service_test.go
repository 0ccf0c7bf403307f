package watch

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/peeragent/peeragent/state"
)

func testService(name, rv string, ingress string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: rv},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: ingress}}}}}
}

func testSlice(name, rv string, ready bool) *discoveryv1.EndpointSlice {
	node := testNodeName
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: rv,
		Labels: map[string]string{discoveryv1.LabelServiceName: "web"}}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, NodeName: &node, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}}}
}

// The Service and EndpointSlice watches run only while wanted
// (docs/routes.md §8.4): nothing is listed before WatchServices; then both
// kinds list (only the fields §8.4 reads) and follow changes; after
// UnwatchServices nothing more arrives, and the list and watch calls stop.
func TestKubeServiceWatch(t *testing.T) {
	f := newKubeFakes([]runtime.Object{testService("web", "1", "198.51.100.5"), testSlice("web-abc", "1", true)})
	k, rec := startKube(t, f, GroupCRD, nil)
	f.opened.wait(t, 1, "pods")
	for _, a := range rec.since(0) {
		if s, ok := a.(state.SourceSynced); ok && (s.Kind == state.KindService || s.Kind == state.KindEndpointSlice) {
			t.Fatalf("%s listed before WatchServices", s.Kind)
		}
	}
	k.WatchServices()
	k.WatchServices()
	svc, at := nextAction(t, rec, 0, "services listed", func(a state.SourceSynced) bool { return a.Kind == state.KindService })
	want := state.Service{Namespace: "default", Name: "web", Type: "LoadBalancer", ClusterIPs: []string{"10.96.0.10"},
		IngressIPs: []string{"198.51.100.5"}, ExternalTrafficPolicy: "Local", IPFamilies: []string{"IPv4"}}
	if len(svc.Services) != 1 || !reflect.DeepEqual(svc.Services[0], want) {
		t.Errorf("services listed %+v, want [%+v]", svc.Services, want)
	}
	sl, _ := nextAction(t, rec, 0, "slices listed", func(a state.SourceSynced) bool { return a.Kind == state.KindEndpointSlice })
	if len(sl.EndpointSlices) != 1 || sl.EndpointSlices[0].ServiceName != "web" || sl.EndpointSlices[0].Endpoints[0].NodeName != testNodeName ||
		!*sl.EndpointSlices[0].Endpoints[0].Ready {
		t.Errorf("slices listed %+v", sl.EndpointSlices)
	}
	f.opened.wait(t, 1, "services", "endpointslices")
	slices := f.client.DiscoveryV1().EndpointSlices("default")
	mustCall(t)(slices.Update(bgCtx(), testSlice("web-abc", "2", false), metav1.UpdateOptions{}))
	up, at := nextAction[state.EndpointSliceUpserted](t, rec, at, "slice not ready", nil)
	if *up.Slice.Endpoints[0].Ready {
		t.Errorf("slice update %+v, want not ready", up.Slice)
	}

	k.UnwatchServices()
	k.UnwatchServices()
	at = rec.mark()
	mustCall(t)(slices.Update(bgCtx(), testSlice("web-abc", "3", true), metav1.UpdateOptions{}))
	k.Watch("sentinel")
	nextAction(t, rec, at, "sentinel absent", secretGone("sentinel"))
	for _, a := range rec.since(at) {
		switch a := a.(type) {
		case state.EndpointSliceUpserted, state.ServiceUpserted:
			t.Errorf("after UnwatchServices: %s %+v", a.ActionName(), a)
		case state.SourceSynced:
			if a.Kind == state.KindService || a.Kind == state.KindEndpointSlice {
				t.Errorf("after UnwatchServices: %s listed", a.Kind)
			}
		}
	}
}
