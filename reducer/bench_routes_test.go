package reducer_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// Own paths (docs/routes.md §8.1): a cluster of n BlockAffinities over
// n/10 nodes in the mesh (ten blocks each), one IPPool holding every
// block. The watchers drop other nodes' affinities at the edge (watch/),
// so the State holds node-a's ten and every node (its neighbors).
var affinitySizes = []int{100, 10000}

func affinityObjects(n int) []state.Action {
	var nodes []state.Node
	var affs []state.BlockAffinity
	for i := 0; i < n/10; i++ {
		name := benchNodeName(i)
		nodes = append(nodes, state.Node{Name: name,
			IPv4Address: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).String() + "/8"})
		if i == 0 {
			for j := 0; j < 10; j++ {
				affs = append(affs, affinity(name, j, "confirmed"))
			}
		}
	}
	return []state.Action{
		state.SourceSynced{Kind: state.KindNode, Nodes: nodes},
		state.SourceSynced{Kind: state.KindBGPConfiguration},
		state.SourceSynced{Kind: state.KindBGPFilter},
		state.SourceSynced{Kind: state.KindBGPPeer},
		state.SourceSynced{Kind: state.KindPod},
		state.SourceSynced{Kind: state.KindIPPool, Pools: []state.IPPool{{Name: "pods", CIDR: "100.64.0.0/10"}}},
		state.SourceSynced{Kind: state.KindBlockAffinity, Affinities: affs},
	}
}

func benchNodeName(i int) string {
	if i == 0 {
		return "node-a"
	}
	return fmt.Sprintf("node-%05d", i)
}

// affinity is the k-th /26 of 100.64.0.0/10, affine to node.
func affinity(node string, k int, st string) state.BlockAffinity {
	a := netip.AddrFrom4([4]byte{100, byte(64 + (k*64)>>16), byte((k * 64) >> 8), byte(k * 64)})
	name := fmt.Sprintf("%s-%s-26", node, a)
	return state.BlockAffinity{Name: name, Node: node, CIDR: netip.PrefixFrom(a, 26).String(), State: st}
}

// BenchmarkOwnAffinityChange: one of node-a's blocks goes pending and
// back (a delete-path, then an add-path), at 100 and 10,000 affinities.
func BenchmarkOwnAffinityChange(b *testing.B) {
	for _, n := range affinitySizes {
		b.Run(fmt.Sprintf("affinities=%d", n), func(b *testing.B) {
			s := fromScratch(affinityObjects(n))
			states := []string{"pending", "confirmed"}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s = step(b, s, state.BlockAffinityUpserted{Affinity: affinity("node-a", 3, states[i%2])}, true)
			}
		})
	}
}

// TestOtherNodeAffinityNoEffect: with 10,000 affinities, a change to
// another node's affinity that reaches the reducer gives no effect.
func TestOtherNodeAffinityNoEffect(t *testing.T) {
	s := state.New("node-a", state.Options{})
	for _, a := range affinityObjects(10000) {
		s = reducer.Reduce(s, a)
	}
	for _, st := range []string{"pending", "confirmed"} {
		next := reducer.Reduce(s, state.BlockAffinityUpserted{Affinity: affinity("node-00007", 73, st)})
		if effs := effects.Diff(s, next); len(effs) != 0 {
			t.Errorf("another node's affinity going %s: %v", st, effs)
		}
		s = next
	}
}
