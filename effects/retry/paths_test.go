package retry

import (
	"net/netip"
	"testing"
	"time"

	"github.com/peeragent/peeragent/state"
)

var blockA = netip.MustParsePrefix("10.65.0.0/26")

func pathDue(p netip.Prefix, gen uint64, at time.Duration) state.Action {
	return state.RetryDue{Prefix: p, Path: true, Gen: gen, At: t0.Add(at)}
}

// An own path call's failure is retried with the same backoff as a
// neighbor's, keyed by prefix (docs/routes.md §10).
func TestSchedulerPaths(t *testing.T) {
	failed := func(gen uint64) state.Action { return state.PathApplyFailed{Prefix: blockA, Gen: gen, Error: "boom"} }
	t.Run("path-failure-retries-after-100ms-then-backs-off", func(t *testing.T) {
		runSteps(t, 0.5, []step{
			{observe: []state.Action{failed(3)}, advance: 100 * ms, want: []state.Action{pathDue(blockA, 3, 100*ms)}},
			{observe: []state.Action{failed(3)}, advance: 199 * ms},
			{advance: ms, want: []state.Action{pathDue(blockA, 3, 300*ms)}},
		})
	})
	t.Run("applied-cancels-the-retry", func(t *testing.T) {
		runSteps(t, 0.5, []step{
			{observe: []state.Action{failed(3), state.PathApplied{Prefix: blockA, Gen: 3}}, advance: time.Second},
		})
	})
	t.Run("address-and-prefix-are-apart", func(t *testing.T) {
		runSteps(t, 0.5, []step{
			{observe: []state.Action{failed(3), peerOK(addrA, 3)}, advance: 100 * ms, want: []state.Action{pathDue(blockA, 3, 100*ms)}},
		})
	})
	t.Run("stop-cancels-path-timers", func(t *testing.T) {
		runSteps(t, 0.5, []step{{observe: []state.Action{failed(3)}, stop: true, advance: time.Second}})
	})
}
