// Package typedclient adapts a client-go clientset (the fake one, in unit
// tests) to watch.Client, the narrow interface the Kubernetes source reads
// through (the agent itself uses watch.TypedClient, which links no
// clientset). watch's own tests keep a copy (client_fake_test.go): they
// cannot import this package, which imports watch.
package typedclient

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/watchlist"

	"github.com/peeragent/peeragent/watch"
)

// Of is cs as a watch.Client, opting out of watch-list when cs does (the
// fake clientset).
func Of(cs kubernetes.Interface) watch.Client { return client{cs} }

type client struct{ cs kubernetes.Interface }

func (c client) Nodes() watch.Lister[*corev1.NodeList] { return c.cs.CoreV1().Nodes() }
func (c client) Pods(ns string) watch.Lister[*corev1.PodList] {
	return c.cs.CoreV1().Pods(ns)
}
func (c client) Secrets(ns string) watch.Lister[*corev1.SecretList] {
	return c.cs.CoreV1().Secrets(ns)
}
func (c client) Services(ns string) watch.Lister[*corev1.ServiceList] {
	return c.cs.CoreV1().Services(ns)
}
func (c client) EndpointSlices(ns string) watch.Lister[*discoveryv1.EndpointSliceList] {
	return c.cs.DiscoveryV1().EndpointSlices(ns)
}

// IsWatchListSemanticsUnSupported is the clientset's answer.
func (c client) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.cs)
}
