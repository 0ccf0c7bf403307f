package reducer_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// routeFailProblems lists the route-failure problems of s.
func routeFailProblems(s state.State) []string {
	var out []string
	s.Out.Problems.Range(func(k string, ps []state.Problem) bool {
		if strings.HasPrefix(k, "routefail/") {
			for _, p := range ps {
				out = append(out, p.Object+": "+p.Reason)
			}
		}
		return true
	})
	return out
}

// TestRouteFailuresOneProblemPerCause: 2,000 routes failing alike are one
// problem with their count, not 2,000 (docs/routes.md §9.7 rule 3); a
// retry failing the same way counts nothing twice; the count falls as
// routes succeed, and the problem goes with the last. Retries come as the
// loop makes them: a Tick at which every failed route is due.
func TestRouteFailuresOneProblemPerCause(t *testing.T) {
	const n = 2000
	nb := netip.MustParseAddr("10.0.0.2")
	ev := state.BestPathsChanged{Gen: 1, Prefixes: make([]state.BestPaths, n)}
	for i := range ev.Prefixes {
		ev.Prefixes[i] = learnedPaths(learnedPrefix(i), nb)
	}
	s := reducer.Reduce(learnedBase(), ev)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	fail := func(i int, why string) {
		p := learnedPrefix(i)
		e, _ := s.Out.Routes.Get(state.PrefixKey(p))
		s = reducer.Reduce(s, state.TableRouteApplyFailed{Prefix: p, Gen: e.Gen, At: now,
			Error: fmt.Sprintf("replace route %s via 192.0.2.9: %s", p, why)})
	}
	retryAll := func() { // past every backoff (reducer.RetryCap)
		now = now.Add(time.Hour)
		s = reducer.Reduce(s, state.Tick{At: now})
	}
	want := func(step string, probs ...string) {
		t.Helper()
		got := routeFailProblems(s)
		if strings.Join(got, "\n") != strings.Join(probs, "\n") {
			t.Errorf("%s: problems\n%s\nwant\n%s", step, strings.Join(got, "\n"), strings.Join(probs, "\n"))
		}
	}
	const allA = "routes: 2000 routes failed like 100.64.7.207/32: replace route 100.64.7.207/32 via 192.0.2.9: network is unreachable"
	for i := range n {
		fail(i, "network is unreachable")
	}
	want("all failed", allA)
	retryAll()
	for i := range n {
		fail(i, "network is unreachable")
	}
	want("retries failed alike", allA)
	retryAll()
	for i := range n - 1 {
		fail(i, "network is unreachable")
	}
	fail(n-1, "no such device") // the last one, for another cause
	want("one of another cause",
		"routes: 1999 routes failed: replace route <prefix> via 192.0.2.9: network is unreachable",
		"route/100.64.7.207/32: replace route 100.64.7.207/32 via 192.0.2.9: no such device")
	retryAll()
	fail(n-1, "network is unreachable")
	want("back to the first cause", allA)
	retryAll()
	for i := range n {
		p := learnedPrefix(i)
		e, _ := s.Out.Routes.Get(state.PrefixKey(p))
		s = reducer.Reduce(s, state.TableRouteApplied{Prefix: p, Gen: e.Gen})
		if i == n/2 {
			want("half applied", fmt.Sprintf("routes: %d routes failed like 100.64.7.207/32: replace route 100.64.7.207/32 via 192.0.2.9: network is unreachable", n-n/2-1))
		}
	}
	want("all applied")
	if s.Out.RouteFailures.Len() != 0 {
		t.Errorf("%d causes still counted", s.Out.RouteFailures.Len())
	}
}
