package agent

import (
	"net/netip"
	"testing"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// TestRouteCountsFollowState: the counts follow whatever changes the
// learned paths and the route table, a wholesale replacement included (a
// new speaker empties Inputs.Learned), and a prefix with two paths from
// one neighbor counts once for it.
func TestRouteCountsFollowState(t *testing.T) {
	if len(tablePhases) != numTablePhases {
		t.Fatalf("numTablePhases %d, tablePhases has %d", numTablePhases, len(tablePhases))
	}
	a, b := mustAddr("10.0.0.2"), mustAddr("10.0.0.9")
	learned := func(prefix string, from ...netip.Addr) *state.BestPaths {
		bp := &state.BestPaths{Prefix: netip.MustParsePrefix(prefix)}
		for _, nb := range from {
			bp.Paths = append(bp.Paths, state.LearnedPath{NextHops: []netip.Addr{nb}, Neighbor: nb})
		}
		return bp
	}
	s0 := state.New("node-a", state.Options{})
	s1 := s0
	for _, bp := range []*state.BestPaths{learned("192.168.1.0/24", a, a), learned("192.168.2.0/24", a, b), learned("192.168.3.0/24", b)} {
		s1.Inputs.Learned = s1.Inputs.Learned.Set(state.PrefixKey(bp.Prefix), bp)
		s1.Out.Routes = s1.Out.Routes.Set(state.PrefixKey(bp.Prefix), &state.TableRoute{Prefix: bp.Prefix, Phase: state.RoutePhasePending})
	}
	c := newRouteCounts()
	c.update(state.State{}, s0)
	c.update(s0, s1)
	check := func(step string, wantA, wantB, wantPending, wantApplied int) {
		t.Helper()
		l, tb := c.snapshot()
		if l[a] != wantA || l[b] != wantB || tb[state.RoutePhasePending] != wantPending || tb[state.RoutePhaseApplied] != wantApplied {
			t.Errorf("%s: learned %v, table %v; want %s %d, %s %d, pending %d, applied %d", step, l, tb, a, wantA, b, wantB, wantPending, wantApplied)
		}
	}
	check("three-prefixes", 2, 2, 3, 0)
	s2 := s1
	k := state.PrefixKey(netip.MustParsePrefix("192.168.2.0/24"))
	s2.Inputs.Learned = s2.Inputs.Learned.Set(k, learned("192.168.2.0/24", b))
	s2.Out.Routes = s2.Out.Routes.Set(k, &state.TableRoute{Prefix: netip.MustParsePrefix("192.168.2.0/24"), Phase: state.RoutePhaseApplied})
	c.update(s1, s2)
	check("one-prefix-loses-a", 1, 2, 2, 1)
	s3 := s2
	s3.Inputs.Learned = pmap.New[*state.BestPaths]()
	c.update(s2, s3)
	check("speaker-restart-empties", 0, 0, 2, 1)
	if l, _ := c.snapshot(); len(l) != 0 {
		t.Errorf("neighbors with no route left are still counted: %v", l)
	}
}

// BenchmarkRouteCounts: the loop's per-step cost of keeping the route
// counts, for a step that adds 100,000 learned prefixes and their table
// routes (the whole of a full-table event), per route.
func BenchmarkRouteCounts(b *testing.B) {
	const n = 100_000
	s0 := state.New("node-a", state.Options{})
	s1 := s0
	nb := mustAddr("10.0.0.2")
	var learned []pmap.Edit[*state.BestPaths]
	var routes []pmap.Edit[*state.TableRoute]
	for i := range n {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{100, byte(64 + i>>16), byte(i >> 8), byte(i)}), 32)
		k := state.PrefixKey(p)
		learned = append(learned, pmap.Edit[*state.BestPaths]{Key: k, Val: &state.BestPaths{Prefix: p,
			Paths: []state.LearnedPath{{NextHops: []netip.Addr{nb}, Neighbor: nb}}}})
		routes = append(routes, pmap.Edit[*state.TableRoute]{Key: k, Val: &state.TableRoute{Prefix: p, Phase: state.RoutePhasePending}})
	}
	s1.Inputs.Learned = s1.Inputs.Learned.Apply(learned)
	s1.Out.Routes = s1.Out.Routes.Apply(routes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := newRouteCounts()
		c.update(s0, s1)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/route")
}
