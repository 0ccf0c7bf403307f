package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"testing"

	api "github.com/osrg/gobgp/v4/api"

	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// BenchmarkLearnedHeap: the live heap one learned route costs
// (docs/routes.md §9.9, the DaemonSet's memory formula), with the agent's
// and the speaker's shares reported apart. The agent of BenchmarkScrape
// (the real Loop over the real GoBGP executor, --dataplane none) learns n
// /32s from another GoBGP in the same process; that peer's own share (its
// RIB of the n paths it originates) is measured alone and taken out.
// Reported per route: agent-B/route (the State's share: Reduce of the
// same best paths into the same State, measured alone), speaker-B/route
// (the rest: the embedded GoBGP's Adj-RIB-In, RIB and its watch),
// total-B/route (the two), peer-B/route (the test's peer, not the agent's).
// Run with -benchtime 1x.
func BenchmarkLearnedHeap(b *testing.B) {
	const n = 100_000
	b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
		var total, peer, agentShare float64
		for i := 0; i < b.N; i++ {
			base := heapAlloc()
			l, stop := learnedAgent(b, n)
			total += float64(heapAlloc()) - float64(base)
			runtime.KeepAlive(l)
			stop()
			peer += peerHeap(b, n)
			agentShare += stateHeap(n)
		}
		per := func(v float64) float64 { return v / float64(b.N*n) }
		b.ReportMetric(per(agentShare), "agent-B/route")
		b.ReportMetric(per(total-peer-agentShare), "speaker-B/route")
		b.ReportMetric(per(total-peer), "total-B/route")
		b.ReportMetric(per(peer), "peer-B/route")
	})
}

// peerHeap is the heap of BenchmarkScrape's peer originating n /32s with
// no session up (its agent port has no listener).
func peerHeap(b *testing.B, n int) float64 {
	base := heapAlloc()
	p := routePeer(b, benchPort(b), benchPort(b), n)
	h := float64(heapAlloc()) - float64(base)
	p.StopBgp(context.Background(), &api.StopBgpRequest{})
	return h
}

// stateHeap is the heap the agent's State keeps for n best paths from one
// neighbor: the Reduce of learnedAgent's event alone.
func stateHeap(n int) float64 {
	s := state.New("node-a", state.Options{MaxPrefixes: uint32(n)})
	for _, a := range []state.Action{
		state.SourceSynced{Kind: state.KindBGPConfiguration, Configs: []state.BGPConfiguration{{Name: "default", ASNumber: 64512}}},
		state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{{Name: "node-a", IPv4Address: "127.0.0.1/8"}}},
		state.SourceSynced{Kind: state.KindBGPPeer, Peers: []state.BGPPeer{{Name: "tor", PeerIP: "127.0.0.2", ASNumber: 65001}}},
		state.SourceSynced{Kind: state.KindBGPFilter}, state.SourceSynced{Kind: state.KindPod},
		state.SourceSynced{Kind: state.KindIPPool}, state.SourceSynced{Kind: state.KindBlockAffinity},
		state.RoutesListed{Dataplane: "none"},
	} {
		s = reducer.Reduce(s, a)
	}
	nb := netip.MustParseAddr("127.0.0.2")
	ev := state.BestPathsChanged{Gen: s.Routing.SpeakerGen, Prefixes: make([]state.BestPaths, n)}
	for i := range ev.Prefixes {
		a := netip.AddrFrom4([4]byte{100, byte(64 + i>>16), byte(i >> 8), byte(i)})
		ev.Prefixes[i] = state.BestPaths{Prefix: netip.PrefixFrom(a, 32),
			Paths: []state.LearnedPath{{NextHops: []netip.Addr{nb}, Neighbor: nb}}}
	}
	base := heapAlloc()
	next := reducer.Reduce(s, ev)
	ev = state.BestPathsChanged{}
	h := float64(heapAlloc()) - float64(base)
	if next.Inputs.Learned.Len() != n {
		panic(fmt.Sprintf("state has %d learned prefixes, want %d", next.Inputs.Learned.Len(), n))
	}
	return h
}
