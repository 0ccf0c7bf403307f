package reducer

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// checkSettled sweeps the held routes that are not desired once the
// routes are settled (docs/routes.md §9.6 rule 3); until then it keeps
// the settle deadline, when a time limit of settling runs out.
func (t *tx) checkSettled() {
	defer t.rescanClock()
	r := &t.s.Routing
	if r.Settled || !t.ready || t.s.Server == (state.Server{}) {
		r.SettleAt, r.Settle = time.Time{}, nil
		return
	}
	settled, next := t.settled()
	if !settled {
		r.SettleAt = next
		return
	}
	r.Settled, r.SettleAt, r.Settle = true, time.Time{}, nil
	t.s.Out.Routes.Range(func(k string, e *state.TableRoute) bool {
		if e.Held == nil || e.Wanted() {
			return true
		}
		c := *e
		c.Held = nil
		t.s.Routing.Seq++
		c.Gen, c.Phase, c.Attempts, c.LastError, c.Retry, c.RetryAt = t.s.Routing.Seq, state.RoutePhasePending, 0, "", 0, time.Time{}
		t.clearRouteFailure(e)
		t.s.Out.Routes = t.s.Out.Routes.Set(k, &c)
		return true
	})
}

// settled: the settle maximum has passed since the server start, or every
// active neighbor has sent End-of-RIB for each of its unicast families, or
// is not Established within its restart time, or is waiting or failed.
// When not, next is the earliest time after Now at which one of those
// time limits runs out (zero before the server start). The neighbors are
// counted (settleCount), not walked: a step costs what changed in it.
func (t *tx) settled() (ok bool, next time.Time) {
	c := t.settleCount()
	r := t.s.Routing
	if r.Since.IsZero() {
		return c.Pending == 0 && len(c.Restarts) == 0, time.Time{}
	}
	max := r.Since.Add(t.s.Options.RouteSettleMax.Duration)
	if !t.s.Now.Before(max) {
		return true, time.Time{}
	}
	next, ok = max, c.Pending == 0
	for _, x := range c.Restarts {
		if end := r.Since.Add(x.Restart); t.s.Now.Before(end) {
			ok = false
			if end.Before(next) {
				next = end
			}
		}
	}
	return ok, next
}

// settleCount is the count of what settling waits for in the step's
// State (state.SettleCount): the one the State carries, brought up to
// date by the neighbors whose neighbor, session or End-of-RIB entries
// changed since it was counted; counted afresh when there is none.
func (t *tx) settleCount() *state.SettleCount {
	r, out := &t.s.Routing, &t.s.Out
	old := r.Settle
	switch {
	case old == nil:
		r.Settle = countSettle(out.Neighbors, out.Sessions, r.EOR)
	case old.Neighbors != out.Neighbors || old.Sessions != out.Sessions || !sameStrings(old.EOR, r.EOR):
		c := &state.SettleCount{Neighbors: out.Neighbors, Sessions: out.Sessions, EOR: r.EOR,
			Pending: old.Pending, Restarts: old.Restarts}
		owned := false // c.Restarts is still old's
		for _, k := range settleChanges(old, c) {
			was, is := settleWait(old.Neighbors, old.Sessions, old.EOR, k), settleWait(c.Neighbors, c.Sessions, c.EOR, k)
			if was == is {
				continue
			}
			if !owned {
				c.Restarts, owned = slices.Clone(c.Restarts), true
			}
			addNeed(c, was, -1)
			addNeed(c, is, +1)
		}
		r.Settle = c
	}
	return r.Settle
}

// countSettle counts what settling waits for over every neighbor: the
// plain form of the count.
func countSettle(ns *pmap.Map[*state.Neighbor], xs *pmap.Map[*state.Session], eor []string) *state.SettleCount {
	c := &state.SettleCount{Neighbors: ns, Sessions: xs, EOR: eor}
	ns.Range(func(k string, _ *state.Neighbor) bool {
		addNeed(c, settleWait(ns, xs, eor, k), +1)
		return true
	})
	return c
}

// settleWait is what the neighbor at k makes settling wait for: its
// End-of-RIBs (pending), its restart time (not Established: a neighbor
// with no graceful-restart time counts 120 s), or nothing (none, not
// active, no session, waiting or failed).
func settleWait(ns *pmap.Map[*state.Neighbor], xs *pmap.Map[*state.Session], eor []string, k string) settleNeed {
	n, _ := ns.Get(k)
	x, _ := xs.Get(k)
	if !n.Active() || x == nil || x.Phase == state.PhaseFailed || x.Phase == state.PhaseWaiting {
		return settleNeed{}
	}
	if x.BGP != "established" {
		restart := time.Duration(n.GracefulRestartSeconds) * time.Second
		if restart == 0 {
			restart = 120 * time.Second
		}
		return settleNeed{restart: restart}
	}
	r := state.Routing{EOR: eor}
	for _, f := range n.Families {
		if strings.HasSuffix(f, "-unicast") && !r.HasEOR(n.Address, f) {
			return settleNeed{pending: true}
		}
	}
	return settleNeed{}
}

// settleChanges are the keys of the neighbors whose neighbor, session or
// End-of-RIB entries differ between two counts' sources, sorted, once each.
func settleChanges(a, b *state.SettleCount) []string {
	var keys []string
	add := func(k string) { keys = append(keys, k) }
	if a.Neighbors != b.Neighbors { // (the callbacks are allocated only then)
		pmap.Diff(a.Neighbors, b.Neighbors, func(x, y *state.Neighbor) bool { return x == y },
			func(k string, _ *state.Neighbor, _ bool, _ *state.Neighbor, _ bool) { add(k) })
	}
	if a.Sessions != b.Sessions {
		pmap.Diff(a.Sessions, b.Sessions, func(x, y *state.Session) bool { return x == y },
			func(k string, _ *state.Session, _ bool, _ *state.Session, _ bool) { add(k) })
	}
	if !sameStrings(a.EOR, b.EOR) {
		eorChanges(a.EOR, b.EOR, add)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// eorChanges calls add with the address key of each End-of-RIB entry
// ("KEY FAMILY") in one sorted list and not the other.
func eorChanges(a, b []string, add func(string)) {
	key := func(e string) string { k, _, _ := strings.Cut(e, " "); return k }
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || len(a) > 0 && a[0] < b[0]:
			add(key(a[0]))
			a = a[1:]
		case len(a) == 0 || b[0] < a[0]:
			add(key(b[0]))
			b = b[1:]
		default:
			a, b = a[1:], b[1:]
		}
	}
}

// sameStrings: the same slice (End-of-RIB lists are never modified, only
// replaced).
func sameStrings(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// settleNeed is what one neighbor makes settling wait for.
type settleNeed struct {
	pending bool
	restart time.Duration
}

// addNeed adds d neighbors that wait for w to c, whose Restarts the
// caller owns.
func addNeed(c *state.SettleCount, w settleNeed, d int) {
	switch {
	case w.pending:
		c.Pending += d
	case w.restart > 0:
		i, ok := slices.BinarySearchFunc(c.Restarts, w.restart, func(x state.RestartCount, r time.Duration) int {
			return cmp.Compare(x.Restart, r)
		})
		if !ok {
			c.Restarts = slices.Insert(c.Restarts, i, state.RestartCount{Restart: w.restart})
		}
		if c.Restarts[i].N += d; c.Restarts[i].N == 0 {
			c.Restarts = slices.Delete(c.Restarts, i, i+1)
		}
	}
}
