package reducer

import (
	"maps"
	"slices"
	"time"

	"github.com/peeragent/peeragent/state"
)

// Rescans (docs/routes.md §9.7 rule 6): the dataplane is listed again
// from time to time and compared with the route table, so that a route
// someone else removed, changed or added under this agent's protocol or
// FIB source is put back in line, as BIRD's kernel protocol does on each
// scan.

// rescanClock keeps the rescan deadline: a live, settled table (held
// routes are the sweep's business until then) is rescanned every
// Options.RouteRescan, the first time that long after it settled (at the
// reducer's clock, or the speaker's start if later).
func (t *tx) rescanClock() {
	r, every := &t.s.Routing, t.s.Options.RouteRescan.Duration
	switch {
	case every <= 0 || !t.ready || !r.Settled:
		r.RescanAt = time.Time{}
	case r.RescanAt.IsZero():
		r.RescanAt = later(t.s.Now, r.Since).Add(every)
	}
}

// rescanDue asks for a rescan when its time has come at the Tick's Now,
// one at a time: while one is outstanding the time passes, none is asked.
func (t *tx) rescanDue() {
	r := &t.s.Routing
	if r.RescanAt.IsZero() || t.s.Now.Before(r.RescanAt) {
		return
	}
	r.RescanAt = t.s.Now.Add(t.s.Options.RouteRescan.Duration)
	if r.Rescan == r.Rescanned {
		r.Rescan++
	}
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
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
	c.Gen, c.Phase, c.Attempts, c.LastError, c.Retry, c.RetryAt = t.s.Routing.Seq, state.RoutePhasePending, 0, "", 0, time.Time{}
	t.clearRouteFailure(e)
	t.s.Out.Routes = t.s.Out.Routes.Set(k, &c)
}
