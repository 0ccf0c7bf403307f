package reducer

import (
	"net/netip"
	"time"

	"github.com/peeragent/peeragent/state"
)

// pathCall: an own path added, withdrawn or with other attributes needs a
// call, which draws a new generation (docs/routes.md §10); a change of
// origins alone needs none (§8.1 rule 7). The new call supersedes the
// previous one, its failure and its retry.
func (t *tx) pathCall(k string, p netip.Prefix, old, n *state.Path) {
	if old.SameAttrs(n) {
		return
	}
	op := state.PathOpAdd
	if n == nil {
		op = state.PathOpDelete
	}
	t.s.PathSeq++
	t.s.Out.PathCalls = t.s.Out.PathCalls.Set(k, &state.PathCall{Prefix: p, Op: op, Gen: t.s.PathSeq, Phase: state.RoutePhasePending})
	t.setProblems(pathFailBucket(k), nil)
}

// currentPathCall calls fn with a copy of the call for prefix p when gen
// is its generation; otherwise the result is stale and nothing happens.
func (t *tx) currentPathCall(p netip.Prefix, gen uint64, fn func(string, *state.PathCall)) {
	k := state.PrefixKey(p.Masked())
	cur, ok := t.s.Out.PathCalls.Get(k)
	if !ok || cur.Gen != gen {
		return
	}
	c := *cur
	fn(k, &c)
}

// pathApplied: the speaker holds (or no longer holds) the path; an applied
// withdrawal ends the entry.
func (t *tx) pathApplied(a state.PathApplied) {
	t.currentPathCall(a.Prefix, a.Gen, func(k string, c *state.PathCall) {
		t.setProblems(pathFailBucket(k), nil)
		if c.Op == state.PathOpDelete {
			t.s.Out.PathCalls = t.s.Out.PathCalls.Delete(k)
			return
		}
		if c.Phase == state.RoutePhaseApplied {
			return
		}
		c.Phase, c.Attempts, c.LastError = state.RoutePhaseApplied, 0, ""
		t.s.Out.PathCalls = t.s.Out.PathCalls.Set(k, c)
	})
}

// pathFailed: failed path calls are data (docs/routes.md §10): phase,
// attempts and last error, and a problem, until the retry succeeds.
func (t *tx) pathFailed(a state.PathApplyFailed) {
	t.currentPathCall(a.Prefix, a.Gen, func(k string, c *state.PathCall) {
		c.Phase, c.LastError = state.RoutePhaseFailed, a.Error
		c.Attempts++
		c.RetryAt = t.retryAt(state.RetryPath, k, c.Attempts, a.At)
		t.s.Out.PathCalls = t.s.Out.PathCalls.Set(k, c)
		t.setProblems(pathFailBucket(k), []state.Problem{{Object: "path/" + c.Prefix.String(), Reason: a.Error}})
	})
}

// pathRetry: the backoff of the failed path call k ran out; Diff makes
// the call again.
func (t *tx) pathRetry(k string) {
	cur, _ := t.s.Out.PathCalls.Get(k)
	c := *cur
	c.Retry++
	c.Phase, c.RetryAt = state.RoutePhasePending, time.Time{}
	t.s.Out.PathCalls = t.s.Out.PathCalls.Set(k, &c)
}

func pathFailBucket(prefixKey string) string { return "pathfail/" + prefixKey }
