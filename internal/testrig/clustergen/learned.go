package clustergen

import (
	"net/netip"

	"github.com/peeragent/peeragent/state"
)

// LearnedSetup is what the learned-route benchmarks start from: node-a
// (10.0.0.1/24) with node-b (10.0.0.2/24) in the mesh, one flat pool
// (100.64.0.0/10), and the table live on the Linux dataplane with nothing
// held (docs/routes.md §9.6): what the agent holds before its first
// best-path event.
func LearnedSetup() []state.Action {
	return []state.Action{
		state.SourceSynced{Kind: state.KindBGPConfiguration, Configs: []state.BGPConfiguration{{Name: "default", ASNumber: 64512}}},
		state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{
			{Name: "node-a", IPv4Address: "10.0.0.1/24"}, {Name: "node-b", IPv4Address: "10.0.0.2/24"}}},
		state.SourceSynced{Kind: state.KindBGPPeer},
		state.SourceSynced{Kind: state.KindBGPFilter},
		state.SourceSynced{Kind: state.KindPod},
		state.SourceSynced{Kind: state.KindIPPool, Pools: []state.IPPool{
			{Name: "pods", CIDR: "100.64.0.0/10", IPIPMode: "Never", VXLANMode: "Never"}}},
		state.SourceSynced{Kind: state.KindBlockAffinity},
		state.RoutesListed{Dataplane: "linux"},
	}
}

// LearnedPrefix is the i-th /32 of 100.64.0.0/10, inside LearnedSetup's
// pool.
func LearnedPrefix(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{100, byte(64 + i>>16), byte(i >> 8), byte(i)}), 32)
}

// LearnedEvent is one best-path event of speaker generation gen carrying
// LearnedPrefix(0) to LearnedPrefix(n-1), each via node-b.
func LearnedEvent(gen uint64, n int) state.BestPathsChanged {
	nb := netip.MustParseAddr("10.0.0.2")
	ev := state.BestPathsChanged{Gen: gen, Prefixes: make([]state.BestPaths, n)}
	for i := range ev.Prefixes {
		ev.Prefixes[i] = state.BestPaths{Prefix: LearnedPrefix(i),
			Paths: []state.LearnedPath{{NextHops: []netip.Addr{nb}, Neighbor: nb}}}
	}
	return ev
}
