package reducer

import (
	"net/netip"
	"slices"
	"time"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// bestPaths takes a best-path event of the running speaker (docs/routes.md
// §9.1): each listed prefix's learned set is replaced by its paths that
// count (neither withdrawn nor local); the initial snapshot replaces the
// whole table. An event of another generation is stale (§9.1 rule 3).
func (t *tx) bestPaths(a state.BestPathsChanged) {
	if a.Gen == 0 || a.Gen != t.s.Routing.SpeakerGen || t.s.Server == (state.Server{}) {
		return // stale, or no speaker runs
	}
	in := &t.s.Inputs
	if a.Init {
		in.Learned.Range(func(_ string, b *state.BestPaths) bool { t.markRoute(b.Prefix); return true })
		in.Learned = pmap.New[*state.BestPaths]()
	}
	// The changes are one batch while the prefixes come in key order (the
	// watch sorts them); a prefix out of order first makes the batch so far.
	edits := make([]pmap.Edit[*state.BestPaths], 0, len(a.Prefixes))
	for _, b := range a.Prefixes {
		if !b.Prefix.IsValid() {
			continue // not unicast IPv4/IPv6: ignored (§11.5)
		}
		p := b.Prefix.Masked()
		k := state.PrefixKey(p)
		if n := len(edits); n > 0 && k <= edits[n-1].Key {
			in.Learned, edits = in.Learned.Apply(edits), edits[:0]
		}
		paths := countingPaths(b.Paths)
		old, had := in.Learned.Get(k)
		if had && len(t.s.Routing.Stale) > 0 {
			paths = withStale(old.Paths, paths) // §9.5 rule 2
		}
		switch {
		case len(paths) == 0 && had:
			edits = append(edits, pmap.Edit[*state.BestPaths]{Key: k, Delete: true})
		case len(paths) == 0:
			continue
		case had && samePaths(old.Paths, paths):
			continue
		default:
			edits = append(edits, pmap.Edit[*state.BestPaths]{Key: k, Val: &state.BestPaths{Prefix: p, Paths: paths}})
		}
		t.markRouteKey(p, k)
	}
	in.Learned = in.Learned.Apply(edits)
}

// countingPaths are the paths that count, neither withdrawn nor local:
// paths itself when all do.
func countingPaths(paths []state.LearnedPath) []state.LearnedPath {
	var out []state.LearnedPath
	for i, x := range paths {
		if x.Withdrawn || x.Local {
			if out == nil {
				out = append(make([]state.LearnedPath, 0, len(paths)-1), paths[:i]...)
			}
			continue
		}
		if out != nil {
			out = append(out, x)
		}
	}
	if out == nil {
		return paths
	}
	return out
}

func samePaths(a, b []state.LearnedPath) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Neighbor != b[i].Neighbor || a[i].Stale != b[i].Stale || !slices.Equal(a[i].NextHops, b[i].NextHops) {
			return false
		}
	}
	return true
}

// endOfRIB records an End-of-RIB of the running speaker (docs/routes.md
// §9.6 rule 3).
func (t *tx) endOfRIB(a state.EndOfRIBReceived) {
	r := &t.s.Routing
	if a.Gen == 0 || a.Gen != r.SpeakerGen || !a.Neighbor.IsValid() || t.s.Server == (state.Server{}) {
		return
	}
	r.EOR = r.WithEOR(a.Neighbor, a.Family)
	t.staleEOR(a.Neighbor.Unmap(), a.Family) // §9.5 rule 2
}

// tick moves the reducer's clock (docs/design.md "Time") and does what is
// due: a rescan, and by the step's end the settling (checkSettled).
func (t *tx) tick(a state.Tick) {
	if a.At.After(t.s.Now) {
		t.s.Now = a.At
	}
	t.rescanDue()
	t.staleDue() // §9.5 rule 2
}

// routesListed makes the dataplane's own routes the held set, once
// (docs/routes.md §9.6 rule 1).
func (t *tx) routesListed(a state.RoutesListed) {
	r := &t.s.Routing
	if r.Listed {
		return
	}
	r.Listed, r.ListError = true, a.Error
	for _, x := range a.Routes {
		h := state.NormalRoute(x)
		r.Preserved = withFamily(r.Preserved, h.Prefix)
		k := state.PrefixKey(h.Prefix)
		old, _ := t.s.Out.Routes.Get(k)
		n := &state.TableRoute{Prefix: h.Prefix}
		if old != nil {
			c := *old
			n = &c
		}
		n.Held = &h
		if !n.Wanted() {
			n.Phase = state.RoutePhaseHeld
		}
		t.s.Out.Routes = t.s.Out.Routes.Set(k, n)
	}
}

// newSpeaker: the server (re)starts or stops (docs/routes.md §9.6 rule 5).
// Facts of the old speaker are stale from now on; what it had learned is
// gone, the learned routes installed become held, and the sweep waits for
// the new speaker to settle.
func (t *tx) newSpeaker() {
	r := &t.s.Routing
	r.SpeakerGen++
	r.Settled, r.Since, r.SettleAt, r.EOR, r.Stale = false, time.Time{}, time.Time{}, nil, nil
	if t.s.RoutesReady() {
		t.s.Out.Routes.Range(func(k string, e *state.TableRoute) bool {
			if e.Origin == "learned" && e.Wanted() {
				c := *e
				c.Held = c.Target()
				t.s.Out.Routes = t.s.Out.Routes.Set(k, &c)
			}
			return true
		})
	}
	t.s.Inputs.Learned.Range(func(_ string, b *state.BestPaths) bool { t.markRoute(b.Prefix); return true })
	t.s.Inputs.Learned = pmap.New[*state.BestPaths]()
}

// goLive: the table's first calls are due. A held route equal to the
// desired one is adopted, any other desired route is replaced, a held one
// that is not desired waits for settling (docs/routes.md §9.6 rule 2).
func (t *tx) goLive() {
	t.s.Out.Routes.Range(func(k string, e *state.TableRoute) bool {
		if !e.Wanted() {
			return true
		}
		c := *e
		if state.SameRoute(c.Held, c.Target()) {
			c.Phase = state.RoutePhaseAdopted
		} else {
			c.Phase = state.RoutePhasePending
		}
		c.Held = nil
		t.s.Out.Routes = t.s.Out.Routes.Set(k, &c)
		return true
	})
}

// tableRouteApplied: the call of the current generation of a prefix is
// done (docs/routes.md §9.7); a removal that is done ends the entry.
func (t *tx) tableRouteApplied(a state.TableRouteApplied) {
	t.tableRouteAppliedAt(state.PrefixKey(a.Prefix.Masked()), a)
}

// tableRouteAppliedAt is tableRouteApplied with the prefix's key k.
func (t *tx) tableRouteAppliedAt(k string, a state.TableRouteApplied) {
	e, ok := t.s.Out.Routes.Get(k)
	if !ok || e.Gen != a.Gen || e.Phase != state.RoutePhasePending {
		return
	}
	c := *e
	c.Attempts, c.LastError = 0, ""
	c.Phase = state.RoutePhaseApplied
	if a.Skipped {
		c.Phase = state.RoutePhaseSkipped
	}
	t.clearRouteFailure(e)
	if !c.Wanted() {
		c.Phase = ""
		if c.NotInstalled == "" {
			t.writeRoute(pmap.Edit[*state.TableRoute]{Key: k, Delete: true})
			return
		}
	}
	t.writeRoute(pmap.Edit[*state.TableRoute]{Key: k, Val: &c})
}

// writeRoute makes one change of the route table: into the step's batch
// while there is one (ReduceRouteResults), else at once.
func (t *tx) writeRoute(e pmap.Edit[*state.TableRoute]) {
	switch {
	case t.routeEdits != nil:
		t.routeEdits = append(t.routeEdits, e)
	case e.Delete:
		t.s.Out.Routes = t.s.Out.Routes.Delete(e.Key)
	default:
		t.s.Out.Routes = t.s.Out.Routes.Set(e.Key, e.Val)
	}
}

// tableRouteFailed: failed routes are data (docs/routes.md §9.7 rule 3):
// phase, attempts and last error, and a problem, until the retry, due
// after the backoff of the attempts.
func (t *tx) tableRouteFailed(a state.TableRouteApplyFailed) {
	k := state.PrefixKey(a.Prefix.Masked())
	e, ok := t.s.Out.Routes.Get(k)
	if !ok || e.Gen != a.Gen || e.Phase != state.RoutePhasePending {
		return
	}
	c := *e
	c.Phase, c.LastError = state.RoutePhaseFailed, a.Error
	c.Attempts++
	c.RetryAt = t.retryAt(state.RetryRoute, k, c.Attempts, a.At)
	t.s.Out.Routes = t.s.Out.Routes.Set(k, &c)
	if old, cur := routeCause(e), routeCause(&c); old != cur {
		if old != "" {
			t.countRouteFailure(old, c.Prefix, -1)
		}
		t.countRouteFailure(cur, c.Prefix, +1)
	}
}

// routeRetry: the backoff of the failed route k ran out; Diff makes the
// call again.
func (t *tx) routeRetry(k string) {
	e, _ := t.s.Out.Routes.Get(k)
	c := *e
	c.Retry++
	c.Phase, c.RetryAt = state.RoutePhasePending, time.Time{}
	t.s.Out.Routes = t.s.Out.Routes.Set(k, &c)
}

// withFamily adds p's unicast family to the sorted list fams.
func withFamily(fams []string, p netip.Prefix) []string {
	f := "ipv4-unicast"
	if p.Addr().Is6() {
		f = "ipv6-unicast"
	}
	if slices.Contains(fams, f) {
		return fams
	}
	out := append(slices.Clone(fams), f)
	slices.Sort(out)
	return out
}
