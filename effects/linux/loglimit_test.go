package linux

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/clustergen"
	"github.com/peeragent/peeragent/internal/testrig/logbuf"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// TestBrokenRoutesLogBounded attacks the executor (docs/routes.md §9.7
// rule 3): 2,000 learned routes whose next hop is not on-link, through the
// reducer, Diff and the Linux executor in a namespace, and 2 retries of
// each. Every route still fails as data (a result each), but they are
// one problem with their count, not 2,000, and the log holds at most
// loglimit.DefaultBurst lines for them (it held one per route per attempt:
// 6,000 lines here; 20,000 routes: ~330 MB of log an hour).
func TestBrokenRoutesLogBounded(t *testing.T) {
	n := newNS(t)
	var sink logbuf.Buffer
	e := New(n.h, Options{Logger: slog.New(slog.NewTextHandler(&sink, nil))})
	const routes, attempts = 2000, 3
	ev := clustergen.LearnedEvent(1, routes)
	for i := range ev.Prefixes {
		ev.Prefixes[i].Paths[0].NextHops = []netip.Addr{netip.MustParseAddr("192.0.2.9")}
	}
	s := learnedState()
	step := func(acts ...state.Action) int {
		next := s
		for _, a := range acts {
			next = reducer.Reduce(next, a)
		}
		res := e.Execute(context.Background(), effects.Diff(s, next))
		s = next
		failed := 0
		for _, r := range res {
			if _, ok := r.(state.TableRouteApplyFailed); ok {
				failed++
			}
			s = reducer.Reduce(s, r)
		}
		return failed
	}
	failed := step(ev)
	for range attempts - 1 {
		var due time.Time // every failed route's retry, as the alarm would ring for the last
		s.Out.Routes.Range(func(_ string, r *state.TableRoute) bool {
			if r.Phase == state.RoutePhaseFailed && r.RetryAt.After(due) {
				due = r.RetryAt
			}
			return true
		})
		failed += step(state.Tick{At: due})
	}
	if failed != routes*attempts {
		t.Errorf("%d failed results, want %d (one per route per attempt)", failed, routes*attempts)
	}
	var probs []string
	s.Out.Problems.Range(func(k string, ps []state.Problem) bool {
		for _, p := range ps {
			probs = append(probs, k+": "+p.Object+": "+p.Reason)
		}
		return true
	})
	got := sink.Lines()
	t.Logf("%d routes x %d attempts not on-link: %d log lines, %d problems %q", routes, attempts, len(got), len(probs), probs)
	if len(probs) != 1 || !strings.Contains(probs[0], fmt.Sprintf("%d routes failed", routes)) {
		t.Errorf("problems %q, want one counting %d routes", probs, routes)
	}
	if len(got) == 0 || len(got) > 3 {
		t.Errorf("%d log lines for %d failures, want 1..3:\n%s", len(got), failed, strings.Join(got, "\n"))
	}
	for _, l := range got {
		if !strings.Contains(l, "kernel route failed") {
			t.Errorf("unexpected line %q", l)
		}
	}
}
