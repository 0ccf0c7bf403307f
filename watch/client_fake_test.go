package watch

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/watchlist"
)

// typedFake is a Client over a client-go clientset (the fake one, in
// unit tests), opting out of watch-list as the fake does.
type typedFake struct{ cs kubernetes.Interface }

func fakeClient(cs kubernetes.Interface) Client { return typedFake{cs} }

func (c typedFake) Nodes() Lister[*corev1.NodeList] { return c.cs.CoreV1().Nodes() }
func (c typedFake) Pods(ns string) Lister[*corev1.PodList] {
	return c.cs.CoreV1().Pods(ns)
}
func (c typedFake) Secrets(ns string) Lister[*corev1.SecretList] {
	return c.cs.CoreV1().Secrets(ns)
}
func (c typedFake) Services(ns string) Lister[*corev1.ServiceList] {
	return c.cs.CoreV1().Services(ns)
}
func (c typedFake) EndpointSlices(ns string) Lister[*discoveryv1.EndpointSliceList] {
	return c.cs.DiscoveryV1().EndpointSlices(ns)
}

// IsWatchListSemanticsUnSupported is the clientset's answer.
func (c typedFake) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.cs)
}

var (
	_ Client      = (*TypedClient)(nil)
	_ GroupLister = (*TypedClient)(nil)
)
