package reducer_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/fakespeaker"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// BenchmarkMeshStart: the pure core's share of one node's start in a
// node-to-node mesh of n nodes (tools/meshsim's cluster: one /26 block per
// node, no BGPPeer), each action reduced and diffed on its own, the
// worst case of the loop's batching: the sources, the server and every
// neighbor applied (fakespeaker), then per neighbor its session going
// active, opensent, openconfirm and established, its block's best path,
// its End-of-RIB, and the route's result from an instant dataplane.
// Reported per op: the whole start; actions/op says how many steps.
func BenchmarkMeshStart(b *testing.B) {
	for _, n := range []int{10, 50, 100} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			steps := 0
			for i := 0; i < b.N; i++ {
				steps = meshStart(b, n)
			}
			b.ReportMetric(float64(steps), "actions/op")
		})
	}
}

func meshNode(i int) (state.Node, state.BlockAffinity, netip.Addr, netip.Prefix) {
	addr := netip.AddrFrom4([4]byte{10, 200, byte(i >> 8), byte(i)})
	block := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(i >> 2), byte(i&3) << 6}), 26)
	name := fmt.Sprintf("node-%d", i)
	return state.Node{Name: name, IPv4Address: addr.String() + "/16"},
		state.BlockAffinity{Name: fmt.Sprintf("%s-b", name), Node: name, CIDR: block.String(), State: "confirmed"},
		addr, block
}

func meshStart(b *testing.B, n int) int {
	var nodes []state.Node
	var affs []state.BlockAffinity
	for i := 1; i <= n; i++ {
		nd, aff, _, _ := meshNode(i)
		nodes, affs = append(nodes, nd), append(affs, aff)
	}
	s := state.New("node-1", state.Options{})
	steps := 0
	dp := &instantDataplane{}
	ctx := context.Background()
	var do func(a state.Action)
	do = func(a state.Action) {
		steps++
		next := reducer.Reduce(s, a)
		effs := effects.Diff(s, next)
		s = next
		for _, r := range fakespeaker.Ack(effs) {
			do(r)
		}
		for _, r := range effects.ApplyRoutes(ctx, dp, effs) {
			do(r)
		}
	}
	for _, a := range []state.Action{
		state.SourceSynced{Kind: state.KindBGPConfiguration, Configs: []state.BGPConfiguration{{Name: "default", ASNumber: 64512}}},
		state.SourceSynced{Kind: state.KindNode, Nodes: nodes},
		state.SourceSynced{Kind: state.KindBGPPeer},
		state.SourceSynced{Kind: state.KindBGPFilter},
		state.SourceSynced{Kind: state.KindPod},
		state.SourceSynced{Kind: state.KindIPPool, Pools: []state.IPPool{
			{Name: "default-ipv4-ippool", CIDR: "10.244.0.0/16", IPIPMode: "Never", VXLANMode: "Never"}}},
		state.SourceSynced{Kind: state.KindBlockAffinity, Affinities: affs},
		state.RoutesListed{Dataplane: "linux"},
	} {
		do(a)
	}
	if s.Out.Neighbors.Len() != n-1 {
		b.Fatalf("%d neighbors, want %d", s.Out.Neighbors.Len(), n-1)
	}
	gen := s.Routing.SpeakerGen
	for i := 2; i <= n; i++ {
		_, _, addr, block := meshNode(i)
		for _, st := range []string{"active", "opensent", "openconfirm", "established"} {
			do(state.SessionStateChanged{Address: addr, State: st})
		}
		do(state.BestPathsChanged{Gen: gen, Prefixes: []state.BestPaths{{Prefix: block,
			Paths: []state.LearnedPath{{NextHops: []netip.Addr{addr}, Neighbor: addr}}}}})
		do(state.EndOfRIBReceived{Gen: gen, Neighbor: addr, Family: "ipv4-unicast"})
	}
	if !s.Routing.Settled || dp.calls < n-1 {
		b.Fatalf("settled %v, %d route calls: want settled and %d", s.Routing.Settled, dp.calls, n-1)
	}
	return steps
}
