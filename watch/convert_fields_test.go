package watch

import (
	"reflect"
	"slices"
	"testing"

	v3 "github.com/projectcalico/api/pkg/apis/projectcalico/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/peeragent/peeragent/internal/testrig/fieldcov"
	"github.com/peeragent/peeragent/state"
)

// The guard on the input edge (docs/design.md, "Adding a setting"): every leaf field of what a
// converter reads is set alone to a non-zero value, converted, and the
// converted value must differ from the conversion of the same object with
// that leaf zero (the slices and pointers on its way made), or
// the field must be in notRead with why. A field the pinned API gains, or
// one a converter forgets, fails here instead of reaching no peer
// (convert_pin.go makes an API bump stop the build first).

// edge is one converter and the parts of its input it reads.
type edge struct {
	name    string
	base    any      // the empty input object (a struct value)
	roots   []string // what is walked: whole specs, or the parts of Kubernetes objects read
	convert func(any) any
}

func conv[T any, S any](f func(*T) S) func(any) any {
	return func(v any) any { x := v.(T); return f(&x) }
}

var edges = []edge{
	{"BGPPeer", v3.BGPPeer{}, []string{"ObjectMeta.Name", "ObjectMeta.Annotations[" + state.AnnotationMaxPrefixes + "]", "Spec"}, conv(Peer)},
	{"BGPConfiguration", v3.BGPConfiguration{}, []string{"ObjectMeta.Name", "Spec"}, conv(Config)},
	{"BGPFilter", v3.BGPFilter{}, []string{"ObjectMeta.Name", "Spec"}, conv(Filter)},
	{"IPPool", v3.IPPool{}, []string{"ObjectMeta.Name", "Spec"}, conv(Pool)},
	{"BlockAffinity", BlockAffinityObject{}, []string{"ObjectMeta.Name", "Spec"}, conv(Affinity)},
	{"Node", corev1.Node{}, []string{"ObjectMeta.Name", "ObjectMeta.Labels",
		"ObjectMeta.Annotations[" + AnnotationIPv4 + "]", "ObjectMeta.Annotations[" + AnnotationIPv6 + "]",
		"ObjectMeta.Annotations[" + AnnotationASN + "]", "ObjectMeta.Annotations[" + AnnotationClusterID + "]"}, conv(Node)},
	{"Pod", corev1.Pod{}, []string{"ObjectMeta.Name", "ObjectMeta.Namespace", "Spec.HostNetwork",
		"Status.Phase", "Status.PodIP", "Status.PodIPs"}, conv(Pod)},
	{"Service", corev1.Service{}, []string{"ObjectMeta.Name", "ObjectMeta.Namespace", "Spec", "Status.LoadBalancer"}, conv(Service)},
	{"EndpointSlice", discoveryv1.EndpointSlice{}, []string{"ObjectMeta.Name", "ObjectMeta.Namespace",
		"ObjectMeta.Labels[" + discoveryv1.LabelServiceName + "]", "AddressType", "Endpoints", "Ports"}, conv(EndpointSlice)},
	{"Secret", corev1.Secret{}, []string{"ObjectMeta.Name", "Data", "StringData", "Type", "Immutable"}, conv(Secret)},
}

// notRead are the leaves the converters leave out on purpose, by edge and
// path, with why. This table and the converters are the fate of every field
// of the pinned API's BGP types (docs/semantics.md §1, docs/routes.md
// "Amendment to §1").
var notRead = map[string]string{
	// IPPool: only what docs/routes.md §8.6 reads.
	"IPPool Spec.NATOutgoing":       "no BGP meaning (the dataplane's SNAT)",
	"IPPool Spec.NATOutgoingV1":     "no BGP meaning (v1 spelling of natOutgoing, must be false in v3)",
	"IPPool Spec.BlockSize":         "IPAM: the blocks advertised come from BlockAffinities, with their own CIDR",
	"IPPool Spec.NodeSelector":      "IPAM: which nodes allocate from the pool; a block's node comes from its BlockAffinity",
	"IPPool Spec.NamespaceSelector": "IPAM: which pods allocate from the pool",
	"IPPool Spec.IPIP.Enabled":      "v1 spelling of ipipMode (must be nil in v3)",
	"IPPool Spec.IPIP.Mode":         "v1 spelling of ipipMode (must be nil in v3)",
	"IPPool Spec.AllowedUses":       "IPAM: which kinds of address are allocated from the pool",
	"IPPool Spec.AssignmentMode":    "IPAM: automatic or manual allocation",
	// Pod: docs/routes.md §8.1 rule 3.
	// Service: docs/routes.md §8.4.
	"Service Spec.Ports[].Name":                                  "no BGP meaning: routes are per address, not per port",
	"Service Spec.Ports[].Protocol":                              "no BGP meaning: routes are per address, not per port",
	"Service Spec.Ports[].AppProtocol":                           "no BGP meaning: routes are per address, not per port",
	"Service Spec.Ports[].Port":                                  "no BGP meaning: routes are per address, not per port",
	"Service Spec.Ports[].TargetPort.Type":                       "no BGP meaning: routes are per address, not per port",
	"Service Spec.Ports[].TargetPort.IntVal":                     "no BGP meaning: routes are per address, not per port",
	"Service Spec.Ports[].TargetPort.StrVal":                     "no BGP meaning: routes are per address, not per port",
	"Service Spec.Ports[].NodePort":                              "no BGP meaning: routes are per address, not per port",
	"Service Spec.Selector":                                      "which endpoints back it comes from its EndpointSlices",
	"Service Spec.ExternalName":                                  "an ExternalName service has no address to advertise (its type is read)",
	"Service Spec.SessionAffinity":                               "no BGP meaning (kube-proxy)",
	"Service Spec.LoadBalancerSourceRanges":                      "no BGP meaning (kube-proxy's filtering)",
	"Service Spec.HealthCheckNodePort":                           "no BGP meaning (the load balancer's health check)",
	"Service Spec.PublishNotReadyAddresses":                      "readiness comes from the EndpointSlices' conditions",
	"Service Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds": "no BGP meaning (kube-proxy)",
	"Service Spec.IPFamilyPolicy":                                "the families come from ipFamilies and the addresses",
	"Service Spec.AllocateLoadBalancerNodePorts":                 "no BGP meaning (node ports)",
	"Service Spec.LoadBalancerClass":                             "Calico advertises load-balancer addresses whatever their class",
	"Service Spec.InternalTrafficPolicy":                         "cluster-internal traffic; BGP follows externalTrafficPolicy (as Calico)",
	"Service Spec.TrafficDistribution":                           "no BGP meaning (kube-proxy's endpoint preference)",
	"Service Status.LoadBalancer.Ingress[].Hostname":             "a hostname is no route (only ingress IPs are advertised)",
	"Service Status.LoadBalancer.Ingress[].IPMode":               "no BGP meaning (kube-proxy's handling of the address)",
	"Service Status.LoadBalancer.Ingress[].Ports[].Port":         "no BGP meaning: routes are per address, not per port",
	"Service Status.LoadBalancer.Ingress[].Ports[].Protocol":     "no BGP meaning: routes are per address, not per port",
	"Service Status.LoadBalancer.Ingress[].Ports[].Error":        "no BGP meaning: routes are per address, not per port",
	// EndpointSlice: docs/routes.md §8.4 reads the node and readiness of each endpoint.
	"EndpointSlice Endpoints[].Addresses":                 "the service's own addresses are advertised, not its endpoints'",
	"EndpointSlice Endpoints[].Conditions.Serving":        "Calico counts ready endpoints only",
	"EndpointSlice Endpoints[].Conditions.Terminating":    "Calico counts ready endpoints only",
	"EndpointSlice Endpoints[].Hostname":                  "the endpoint's node is read from nodeName",
	"EndpointSlice Endpoints[].TargetRef.Kind":            "the endpoint's node is read from nodeName",
	"EndpointSlice Endpoints[].TargetRef.Namespace":       "the endpoint's node is read from nodeName",
	"EndpointSlice Endpoints[].TargetRef.Name":            "the endpoint's node is read from nodeName",
	"EndpointSlice Endpoints[].TargetRef.UID":             "the endpoint's node is read from nodeName",
	"EndpointSlice Endpoints[].TargetRef.APIVersion":      "the endpoint's node is read from nodeName",
	"EndpointSlice Endpoints[].TargetRef.ResourceVersion": "the endpoint's node is read from nodeName",
	"EndpointSlice Endpoints[].TargetRef.FieldPath":       "the endpoint's node is read from nodeName",
	"EndpointSlice Endpoints[].DeprecatedTopology":        "the endpoint's node is read from nodeName",
	"EndpointSlice Endpoints[].Zone":                      "no BGP meaning (topology-aware routing in kube-proxy)",
	"EndpointSlice Endpoints[].Hints.ForZones[].Name":     "no BGP meaning (topology-aware routing in kube-proxy)",
	"EndpointSlice Endpoints[].Hints.ForNodes[].Name":     "no BGP meaning (topology-aware routing in kube-proxy)",
	"EndpointSlice Ports[].Name":                          "no BGP meaning: routes are per address, not per port",
	"EndpointSlice Ports[].Protocol":                      "no BGP meaning: routes are per address, not per port",
	"EndpointSlice Ports[].Port":                          "no BGP meaning: routes are per address, not per port",
	"EndpointSlice Ports[].AppProtocol":                   "no BGP meaning: routes are per address, not per port",
	// Secret: one key per reference (docs/semantics.md §4).
	"Secret Type":      "a password is a key of any Secret, whatever its type",
	"Secret Immutable": "the agent watches the Secret either way",
}

func TestConvertersReadEveryField(t *testing.T) {
	listed := map[string]bool{}
	for _, e := range edges {
		for _, path := range fieldcov.Leaves(e.base, e.roots...) {
			key := e.name + " " + path
			listed[key] = true
			base := e.convert(fieldcov.WithContainersAny(e.base, path))
			changed := e.convert(fieldcov.WithLeafAny(e.base, path))
			same := reflect.DeepEqual(changed, base)
			why, skipped := notRead[key]
			switch {
			case same && !skipped:
				t.Errorf("%s: the converter drops %s: convert it (watch/convert.go) or list it in notRead with why", e.name, path)
			case !same && skipped:
				t.Errorf("%s: %s is converted but listed in notRead (%s): remove it there", e.name, path, why)
			}
		}
	}
	var stale []string
	for key := range notRead {
		if !listed[key] {
			stale = append(stale, key)
		}
	}
	slices.Sort(stale)
	for _, key := range stale {
		t.Errorf("notRead lists %q, which no converter input has (renamed upstream?)", key)
	}
}
