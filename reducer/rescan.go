package reducer

import (
	"maps"
	"slices"

	"github.com/peeragent/peeragent/state"
)

// Rescans (docs/routes.md §9.7 rule 6): the dataplane is listed again
// from time to time and compared with the route table, so that a route
// someone else removed, changed or added under this agent's protocol or
// FIB source is put back in line, as BIRD's kernel protocol does on each
// scan.

// rescanDue asks for a rescan: only a live, settled table (held routes
// are the sweep's business until then), one rescan at a time.
func (t *tx) rescanDue() {
	r := &t.s.Routing
	if !t.s.RoutesReady() || !r.Settled || r.Rescan != r.Rescanned {
		return
	}
	r.Rescan++
}

// routesRescanned compares the listing of the current rescan with the
// table. Only entries at rest are compared: applied or adopted ones must
// be listed as they are (else they are applied again; in VPP, listed at
// all), held ones follow the listing; an entry with a call due or failed
// is in flux and left alone. A listed route the table does not know is removed (held until
// settled, if a new speaker unsettled the table meanwhile).
func (t *tx) routesRescanned(a state.RoutesRescanned) {
	r := &t.s.Routing
	if a.Seq == 0 || a.Seq != r.Rescan || r.Rescanned == a.Seq {
		return // stale, or not asked
	}
	r.Rescanned = a.Seq
	r.RescanError = a.Error
	if a.Error != "" || a.Dataplane == "none" || !t.s.RoutesReady() {
		return
	}
	// VPP lists an entry by its best source's paths: where a stronger
	// source (the CNI's API routes) has the prefix too, those are listed,
	// so only presence can be compared there (docs/routes.md §9.7).
	exact := a.Dataplane != "vpp"
	listed := make(map[string]state.Route, len(a.Routes))
	for _, x := range a.Routes {
		x = state.NormalRoute(x)
		listed[state.PrefixKey(x.Prefix)] = x
	}
	t.s.Out.Routes.Range(func(k string, e *state.TableRoute) bool {
		l, ok := listed[k]
		delete(listed, k)
		switch {
		case (e.Phase == state.RoutePhaseApplied || e.Phase == state.RoutePhaseAdopted) && e.Wanted():
			if !ok || (exact && !state.SameRoute(&l, e.Target())) {
				t.repair(k, e)
			}
		case e.Phase == state.RoutePhaseHeld && e.Held != nil:
			c := *e
			if ok {
				if !exact || state.SameRoute(&l, e.Held) {
					return true
				}
				c.Held = &l
			} else {
				c.Held, c.Phase = nil, ""
			}
			t.putRoute(k, e, &c)
		}
		return true
	})
	for _, k := range slices.Sorted(maps.Keys(listed)) { // generations in prefix order
		l := listed[k]
		c := &state.TableRoute{Prefix: l.Prefix}
		if r.Settled {
			r.Seq++
			r.Repairs++
			c.Gen, c.Phase = r.Seq, state.RoutePhasePending // the removal
		} else {
			held := l
			c.Held, c.Phase = &held, state.RoutePhaseHeld
		}
		t.s.Out.Routes = t.s.Out.Routes.Set(k, c)
	}
}

// repair applies an entry again under a new generation: Diff issues the
// call.
func (t *tx) repair(k string, e *state.TableRoute) {
	c := *e
	t.s.Routing.Seq++
	t.s.Routing.Repairs++
	c.Gen, c.Phase, c.Attempts, c.LastError, c.Retry = t.s.Routing.Seq, state.RoutePhasePending, 0, "", 0
	t.clearRouteFailure(e)
	t.s.Out.Routes = t.s.Out.Routes.Set(k, &c)
}
