package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	birdtest "github.com/peeragent/peeragent/internal/testrig/bird"
	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/watch"
)

// TestClusterServiceAdvertised: the real GoBGP executor, the agent's
// requests counted by a transport wrapped around its rest.Config. With no
// service range the agent never asks for Services or EndpointSlices; a
// BGPConfiguration serviceLoadBalancerIPs range starts both watches and
// puts the range in GoBGP's global RIB (docs/routes.md §8.4 rule 1); a
// LoadBalancer Service with externalTrafficPolicy Local whose ingress IP
// is in the range, and an EndpointSlice with a ready endpoint on this
// node, add the ingress /32 (§8.4 rule 2); the endpoint marked not ready
// withdraws it; the range removed withdraws the range and stops the
// watches: their open watch requests end and no list or watch for them
// follows, while a Service change is made.
func TestClusterServiceAdvertised(t *testing.T) {
	e := clusterStart(t, 90*time.Second, nil, clusterCRDs)
	group := watch.GroupCRD
	port := int64(freePort(t, clusterAddr))
	e.putNode(clusterNode, nil, map[string]string{watch.AnnotationIPv4: "127.0.0.1/8"})
	e.putCalico(group, "BGPConfiguration", "default", map[string]any{"listenPort": port, "nodeToNodeMeshEnabled": false})
	rt := &clusterRequests{}
	cfg := e.kc.RESTConfig()
	cfg.WrapTransport = rt.wrap
	a := e.startAgent(clusterAgentConfig{rest: cfg, group: group, realBGP: true})
	a.initial("initial list, no service range", 64512)
	if got := clusterRIB(t, a); len(got) != 0 {
		t.Fatalf("RIB before any service range: %q", got)
	}
	if n := rt.count(clusterSvcResources...); n != 0 {
		t.Fatalf("%d requests for services or endpointslices with no service range: %q", n, rt.lines())
	}

	effs := a.stepInputs("serviceLoadBalancerIPs 192.0.2.0/24 configured", func() {
		e.putCalico(group, "BGPConfiguration", "default", map[string]any{"listenPort": port, "nodeToNodeMeshEnabled": false,
			"serviceLoadBalancerIPs": []any{map[string]any{"cidr": "192.0.2.0/24"}}})
	}, func(s state.State) bool { return s.Synced[state.KindService] && s.Synced[state.KindEndpointSlice] })
	clusterExpect(t, "the range configured", effs, "set-add", "add-path") // the -svc- set: learned routes in the range are re-exported (docs/routes.md §8.3 rule 8)
	a.waitRIB("the range advertised", []string{"192.0.2.0/24"})
	for _, r := range clusterSvcResources {
		if rt.count(r) == 0 || rt.open(r) == 0 {
			t.Fatalf("with the range configured: %d requests for %s, %d open; requests %q", rt.count(r), r, rt.open(r), rt.lines())
		}
	}

	m := a.speaker.mark()
	svc := e.putWebService()
	t.Logf("Service default/web read back: type %s, externalTrafficPolicy %s, clusterIPs %v, ipFamilies %v, ingress %v",
		svc.Spec.Type, svc.Spec.ExternalTrafficPolicy, svc.Spec.ClusterIPs, svc.Spec.IPFamilies, svc.Status.LoadBalancer.Ingress[0].IP)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, NodeName: clusterPtr(clusterNode),
			Conditions: discoveryv1.EndpointConditions{Ready: clusterPtr(true)}}},
		Ports: []discoveryv1.EndpointPort{{Port: clusterPtr(int32(80))}}}
	slices_ := e.cs.DiscoveryV1().EndpointSlices("default")
	slice, err := slices_.Create(e.ctx, slice, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create EndpointSlice: %v", err)
	}
	a.waitRIB("the Local service with a ready endpoint here advertised", []string{"192.0.2.0/24", "192.0.2.10/32"})
	a.settle()
	t.Logf("Service and EndpointSlice (ready on %s) created: RIB %q; speaker effects %s", clusterNode, clusterRIB(t, a),
		clusterOrNone(a.speaker.strings(m)))

	m = a.speaker.mark()
	slice.Endpoints[0].Conditions.Ready = clusterPtr(false)
	if slice, err = slices_.Update(e.ctx, slice, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("mark the endpoint not ready: %v", err)
	}
	a.waitRIB("the endpoint not ready: the /32 withdrawn", []string{"192.0.2.0/24"})
	a.settle()
	clusterExpect(t, "the endpoint not ready", a.speaker.strings(m), "delete-path")
	t.Logf("the endpoint not ready: RIB %q; speaker effects %s", clusterRIB(t, a), clusterOrNone(a.speaker.strings(m)))

	m = a.speaker.mark()
	e.putCalico(group, "BGPConfiguration", "default", map[string]any{"listenPort": port, "nodeToNodeMeshEnabled": false})
	a.waitRIB("the range removed: withdrawn", nil)
	a.waitState("the range removed: services forgotten", func(s state.State) bool {
		return s.Inputs.Services.Len() == 0 && s.Inputs.EndpointSlices.Len() == 0
	})
	a.settle()
	if calls := a.watches.list(); !slices.Equal(calls, []string{"watch-services", "unwatch-services"}) {
		t.Errorf("service watch calls %q, want watch-services then unwatch-services", calls)
	}
	t.Logf("the range removed: speaker effects %s; watch calls %s", clusterOrNone(a.speaker.strings(m)), clusterOrNone(a.watches.list()))
	if !clusterPoll(e.ctx, clusterWaitMax, func() bool { return rt.open(clusterSvcResources...) == 0 }) {
		t.Fatalf("the range removed: %d service or endpointslice requests still open; requests %q",
			rt.open(clusterSvcResources...), rt.lines())
	}
	before := rt.count(clusterSvcResources...)

	// A Service change, then a Node change the agent must read: were the
	// watches still running, the first would arrive before the second.
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.11"}}
	if _, err = e.cs.CoreV1().Services("default").UpdateStatus(e.ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("change the Service: %v", err)
	}
	upserts := a.actions()["serviceUpserted"]
	e.editNode(clusterNode, func(n *corev1.Node) { n.Labels["peeragent.test/after"] = "1" })
	a.waitState("a Node change after the Service change", func(s state.State) bool {
		return clusterNodeLabel(s, clusterNode, "peeragent.test/after") == "1"
	})
	a.settle()
	t.Logf("after a Service change and a Node change: %d requests for services or endpointslices (%d before), %d open",
		rt.count(clusterSvcResources...), before, rt.open(clusterSvcResources...))
	if n := a.actions()["serviceUpserted"]; n != upserts {
		t.Errorf("a Service change reached the agent after the range was removed (%d serviceUpserted, was %d)", n, upserts)
	}
	if after := rt.count(clusterSvcResources...); after != before {
		t.Errorf("%d more requests for services or endpointslices after the range was removed: %q", after-before, rt.lines())
	}
	if got := clusterRIB(t, a); len(got) != 0 {
		t.Errorf("RIB at the end: %q", got)
	}
	t.Logf("agent requests for services and endpointslices, in order:\n  %s", strings.Join(rt.lines(), "\n  "))
}

// clusterSvcResources are the resources of the service watches
// (docs/routes.md §8.4).
var clusterSvcResources = []string{"services", "endpointslices"}

func clusterPtr[T any](v T) *T { return &v }

// clusterRequests counts the agent's requests by resource, list or watch,
// and how many of them are still open (their bodies not closed).
type clusterRequests struct {
	mu    sync.Mutex
	log   []string
	byRes map[string]int
	live  map[string]int
}

func (c *clusterRequests) wrap(rt http.RoundTripper) http.RoundTripper {
	return clusterRoundTrip(func(req *http.Request) (*http.Response, error) {
		res := clusterResource(req.URL.Path)
		verb := "list"
		if req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1" {
			verb = "watch"
		}
		if !slices.Contains(clusterSvcResources, res) || req.Method != http.MethodGet {
			return rt.RoundTrip(req)
		}
		c.mu.Lock()
		if c.byRes == nil {
			c.byRes, c.live = map[string]int{}, map[string]int{}
		}
		c.byRes[res]++
		c.live[res]++
		c.log = append(c.log, fmt.Sprintf("%s %s %s?%s", time.Now().Format("15:04:05.000"), verb, req.URL.Path, req.URL.RawQuery))
		c.mu.Unlock()
		resp, err := rt.RoundTrip(req)
		if err != nil {
			c.done(res)
			return resp, err
		}
		resp.Body = &clusterBody{ReadCloser: resp.Body, close: func() { c.done(res) }}
		return resp, nil
	})
}

func (c *clusterRequests) done(res string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live[res]--
}

// count is how many requests for res were made; open, how many are open.
func (c *clusterRequests) count(res ...string) int { return c.sum(c.byRes, res) }
func (c *clusterRequests) open(res ...string) int  { return c.sum(c.live, res) }

func (c *clusterRequests) sum(m map[string]int, res []string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range res {
		n += m[r]
	}
	return n
}

func (c *clusterRequests) lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.log)
}

// clusterResource is the resource of an API path: .../RESOURCE or
// .../RESOURCE/NAME under /api/v1 or /apis/GROUP/VERSION, namespaced or not.
func clusterResource(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return ""
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	if len(parts) == 0 {
		return ""
	}
	return parts[0]
}

type clusterRoundTrip func(*http.Request) (*http.Response, error)

func (f clusterRoundTrip) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// clusterBody calls close once, when the response body is closed.
type clusterBody struct {
	io.ReadCloser
	once  sync.Once
	close func()
}

func (b *clusterBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.close)
	return err
}

// TestClusterServiceAtBird: the same chain to BIRD 2 as a global BGPPeer
// (eBGP, AS 65001): BIRD receives the range and the Local service's
// ingress /32 with next hop the node's address (docs/routes.md §8.4 rules
// 1–2), and loses the /32 once the endpoint is not ready.
func TestClusterServiceAtBird(t *testing.T) {
	birdtest.Require(t)
	e := clusterStart(t, 90*time.Second, nil, clusterCRDs)
	group := watch.GroupCRD
	birdAddr := netip.MustParseAddr("127.0.0.43")
	b, birdPort, port := clusterStartBird(t, birdAddr.String())
	e.putNode(clusterNode, nil, map[string]string{watch.AnnotationIPv4: "127.0.0.1/8"})
	e.putCalico(group, "BGPConfiguration", "default", map[string]any{"listenPort": int64(port), "nodeToNodeMeshEnabled": false,
		"serviceLoadBalancerIPs": []any{map[string]any{"cidr": "192.0.2.0/24"}}})
	e.putCalico(group, "BGPPeer", "bird", map[string]any{"peerIP": netip.AddrPortFrom(birdAddr, uint16(birdPort)).String(),
		"asNumber": int64(65001)})
	a := e.startAgent(clusterAgentConfig{group: group, realBGP: true})
	if _, err := b.WaitEstablished(e.ctx, "agent"); err != nil {
		t.Fatalf("BIRD's session with the agent: %v; problems %v", err, a.problems())
	}

	e.putWebService()
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, NodeName: clusterPtr(clusterNode),
			Conditions: discoveryv1.EndpointConditions{Ready: clusterPtr(true)}}}}
	slices_ := e.cs.DiscoveryV1().EndpointSlices("default")
	slice, err := slices_.Create(e.ctx, slice, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create EndpointSlice: %v", err)
	}
	route := clusterBirdRoute(t, e, b, "192.0.2.10/32", true)
	for _, want := range []string{"192.0.2.10/32", "BGP.next_hop: 127.0.0.1", "BGP.as_path: 64512"} {
		if !strings.Contains(route, want) {
			t.Errorf("BIRD's route lacks %q:\n%s", want, route)
		}
	}
	t.Logf("BIRD has the service /32:\n%s", route)
	t.Logf("BIRD has the range:\n%s", clusterBirdRoute(t, e, b, "192.0.2.0/24", true))

	slice.Endpoints[0].Conditions.Ready = clusterPtr(false)
	if _, err = slices_.Update(e.ctx, slice, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("mark the endpoint not ready: %v", err)
	}
	t.Logf("the endpoint not ready: BIRD's show route 192.0.2.10/32: %s", clusterBirdRoute(t, e, b, "192.0.2.10/32", false))
	clusterBirdRoute(t, e, b, "192.0.2.0/24", true)
}

// clusterStartBird starts BIRD 2 at addr as the ToR, AS 65001, announcing
// announce to its one neighbor "agent": the agent on clusterAddr, AS
// 64512, at the port it returns (free now), after BIRD's own.
func clusterStartBird(t *testing.T, addr string, announce ...netip.Prefix) (b *birdtest.Bird, birdPort, port int) {
	t.Helper()
	birdAddr := netip.MustParseAddr(addr)
	birdPort = birdtest.FreePort(t, birdAddr)
	port = freePort(t, clusterAddr)
	b = birdtest.Start(t, birdtest.Config{Address: birdAddr, Port: birdPort, AS: 65001, Announce: announce,
		Neighbors: []birdtest.Neighbor{{Name: "agent", Address: netip.MustParseAddr(clusterAddr), Port: port, AS: 64512}}})
	return b, birdPort, port
}

// clusterBirdRoute waits until BIRD has (or has not) a route for prefix and
// returns `show route PREFIX all` (birdc exits 1 with "Network not found"
// for an absent one).
func clusterBirdRoute(t *testing.T, e *clusterEnv, b *birdtest.Bird, prefix string, present bool) string {
	t.Helper()
	var out string
	var err error
	if !clusterPoll(e.ctx, clusterWaitMax, func() bool {
		out, err = b.Exec("show", "route", prefix, "all")
		if !present {
			return strings.Contains(out, "Network not found")
		}
		return err == nil && strings.Contains(out, prefix)
	}) {
		t.Fatalf("BIRD's route for %s, want present %v: %s (err %v)", prefix, present, out, err)
	}
	return strings.TrimSpace(out)
}

// putWebService creates the Service default/web: a LoadBalancer with
// externalTrafficPolicy Local, port 80 and the ingress IP 192.0.2.10.
func (e *clusterEnv) putWebService() *corev1.Service {
	e.t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports: []corev1.ServicePort{{Port: 80}}}}
	svc, err := e.cs.CoreV1().Services("default").Create(e.ctx, svc, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create Service: %v", err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}
	if svc, err = e.cs.CoreV1().Services("default").UpdateStatus(e.ctx, svc, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("set the Service's ingress IP: %v", err)
	}
	return svc
}
