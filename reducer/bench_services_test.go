package reducer_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// Service host paths (docs/routes.md §8.4 rule 2): n LoadBalancer services
// with externalTrafficPolicy Local, each with one EndpointSlice of five
// endpoints (one on node-a), so 10,000 services hold 50,000 endpoints.
var serviceSizes = []int{100, 10000}

func serviceObjects(n int) []state.Action {
	var svcs []state.Service
	var slices []state.EndpointSlice
	for i := 0; i < n; i++ {
		svcs = append(svcs, benchService(i))
		slices = append(slices, benchSlice(i, true))
	}
	return []state.Action{
		state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{{Name: "node-a", IPv4Address: "10.0.0.1/24"}}},
		state.SourceSynced{Kind: state.KindBGPConfiguration, Configs: []state.BGPConfiguration{{Name: "default",
			ServiceClusterIPs:      []state.ServiceCIDR{{CIDR: "10.96.0.0/12"}},
			ServiceLoadBalancerIPs: []state.ServiceCIDR{{CIDR: "198.18.0.0/15"}}}}},
		state.SourceSynced{Kind: state.KindBGPFilter},
		state.SourceSynced{Kind: state.KindBGPPeer},
		state.SourceSynced{Kind: state.KindPod},
		state.SourceSynced{Kind: state.KindIPPool},
		state.SourceSynced{Kind: state.KindBlockAffinity},
		state.SourceSynced{Kind: state.KindService, Services: svcs},
		state.SourceSynced{Kind: state.KindEndpointSlice, EndpointSlices: slices},
	}
}

func benchService(i int) state.Service {
	return state.Service{Namespace: "bench", Name: fmt.Sprintf("svc-%05d", i), Type: "LoadBalancer",
		ClusterIPs:            []string{netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}).String()},
		IngressIPs:            []string{netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}).String()},
		ExternalTrafficPolicy: "Local", IPFamilies: []string{"IPv4"}}
}

// benchSlice: the service's five endpoints; the one on node-a ready or not,
// another node's fifth endpoint ready when other.
func benchSlice(i int, local bool) state.EndpointSlice {
	sl := state.EndpointSlice{Namespace: "bench", Name: fmt.Sprintf("svc-%05d-abc", i), ServiceName: fmt.Sprintf("svc-%05d", i),
		AddressType: "IPv4"}
	for j := 0; j < 5; j++ {
		ep := state.Endpoint{NodeName: fmt.Sprintf("node-%d", j)}
		if j == 0 {
			ep.NodeName = "node-a"
			ep.Ready = &local
		}
		sl.Endpoints = append(sl.Endpoints, ep)
	}
	return sl
}

// BenchmarkServiceEndpointChange: node-a's endpoint of one service turns
// not ready and back (two delete-paths, then two add-paths), at 100 and
// 10,000 services.
func BenchmarkServiceEndpointChange(b *testing.B) {
	for _, n := range serviceSizes {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			s := fromScratch(serviceObjects(n))
			if s.Out.Advertised.Len() != 2*n+2 {
				b.Fatalf("%d paths advertised, want %d", s.Out.Advertised.Len(), 2*n+2)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s = step(b, s, state.EndpointSliceUpserted{Slice: benchSlice(37, i%2 == 1)}, true)
			}
		})
	}
}

// TestOtherNodeEndpointNoEffect: with 10,000 services, another node's
// endpoint of a Local service flapping gives no effect (docs/routes.md
// §10, "zero calls").
func TestOtherNodeEndpointNoEffect(t *testing.T) {
	s := state.New("node-a", state.Options{})
	for _, a := range serviceObjects(10000) {
		s = reducer.Reduce(s, a)
	}
	for _, ready := range []bool{false, true} {
		sl := benchSlice(73, true)
		sl.Endpoints[4].Ready = &ready
		next := reducer.Reduce(s, state.EndpointSliceUpserted{Slice: sl})
		if effs := effects.Diff(s, next); len(effs) != 0 {
			t.Errorf("another node's endpoint ready=%v: %v", ready, effs)
		}
		s = next
	}
}
