package reducer

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// TestReduceRouteResultsIsReduceEach: the results of installs and of
// removals, in key order, shuffled, repeated, stale or for prefixes that
// have none, reduced as one step give the State that Reduce of each in
// turn gives.
func TestReduceRouteResultsIsReduceEach(t *testing.T) {
	s := state.New("node-a", state.Options{})
	for _, a := range []state.Action{
		state.SourceSynced{Kind: state.KindBGPConfiguration, Configs: []state.BGPConfiguration{{Name: "default", ASNumber: 64512}}},
		state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{{Name: "node-a", IPv4Address: "10.0.0.1/24"},
			{Name: "node-b", IPv4Address: "10.0.0.2/24"}}},
		state.SourceSynced{Kind: state.KindBGPPeer},
		state.SourceSynced{Kind: state.KindBGPFilter},
		state.SourceSynced{Kind: state.KindPod},
		state.SourceSynced{Kind: state.KindIPPool, Pools: []state.IPPool{{Name: "pods", CIDR: "100.64.0.0/10"}}},
		state.SourceSynced{Kind: state.KindBlockAffinity},
		state.RoutesListed{Dataplane: "linux"},
	} {
		s = Reduce(s, a)
	}
	nb, self := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.1")
	prefix := func(i int) netip.Prefix {
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{100, 64, byte(i >> 8), byte(i)}), 32)
	}
	event := func(n int, withdraw func(int) bool) state.BestPathsChanged {
		ev := state.BestPathsChanged{Gen: s.Routing.SpeakerGen}
		for i := range n {
			nh := nb
			if i%7 == 0 {
				nh = self // not installed
			}
			ev.Prefixes = append(ev.Prefixes, state.BestPaths{Prefix: prefix(i),
				Paths: []state.LearnedPath{{NextHops: []netip.Addr{nh}, Neighbor: nh, Withdrawn: withdraw(i)}}})
		}
		return ev
	}
	r := rand.New(rand.NewPCG(5, 6))
	results := func(s state.State) []state.TableRouteApplied {
		var out []state.TableRouteApplied
		s.Out.Routes.Range(func(_ string, e *state.TableRoute) bool {
			if e.Phase == state.RoutePhasePending && r.IntN(10) > 0 {
				gen := e.Gen
				if r.IntN(10) == 0 {
					gen-- // stale
				}
				out = append(out, state.TableRouteApplied{Prefix: e.Prefix, Gen: gen})
			}
			return true
		})
		out = append(out, state.TableRouteApplied{Prefix: prefix(999), Gen: 1}) // no such entry
		return out
	}
	check := func(name string, s state.State, rs []state.TableRouteApplied) state.State {
		t.Helper()
		want := s
		for _, a := range rs {
			want = Reduce(want, a)
		}
		before := snapshot(s)
		got := ReduceRouteResults(s, rs)
		if snapshot(s) != before {
			t.Fatalf("%s: ReduceRouteResults changed the State it was given", name)
		}
		if g, w := snapshot(got), snapshot(want); g != w {
			t.Fatalf("%s: one step differs from Reduce of each result:\n%s", name, firstDiff(g, w))
		}
		return want
	}
	s = Reduce(s, event(300, func(int) bool { return false }))
	rs := results(s)
	if len(rs) < 200 {
		t.Fatalf("%d results of 300 learned prefixes", len(rs))
	}
	check("in key order", s, rs)
	shuffled := slices.Clone(rs)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	check("shuffled", s, shuffled)
	s = check("repeated", s, append(slices.Clone(rs[:50]), rs...))
	s = Reduce(s, event(300, func(i int) bool { return i%3 == 0 })) // removals due
	check("removals", s, results(s))
}

// firstDiff is the first line where two snapshots differ.
func firstDiff(a, b string) string {
	la, lb := readable(a), readable(b)
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return "got:  " + la[i] + "\nwant: " + lb[i]
		}
	}
	return "(lengths differ)"
}
