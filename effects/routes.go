package effects

import (
	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// routeEffects are the dataplane calls from prev to next (docs/routes.md
// §10): one route-replace or route-remove per route table entry whose
// call is due (phase pending) under a new generation or a retry, at most
// one per prefix, in prefix order, then a route-rescan when one was asked
// (§9.7 rule 6, at the rescan deadline). Nothing before the gating sources and the dataplane
// listing are in; then every entry that is due, once (adopted routes cost
// no call, docs/routes.md §9.6 rule 2). next is synced (AllSynced);
// prevReady is prev.RoutesReady().
func routeEffects(prev, next state.State, prevReady bool) []Effect {
	if !next.Routing.Listed {
		return nil
	}
	out := tableEffects(prev, next, prevReady)
	if next.Routing.Rescan > prev.Routing.Rescan { // after this step's calls (docs/routes.md §9.7 rule 6)
		out = append(out, RescanRoutes{Seq: next.Routing.Rescan})
	}
	return out
}

// tableEffects are the calls of the entries that are due; prevReady is
// prev.RoutesReady().
func tableEffects(prev, next state.State, prevReady bool) []Effect {
	if prev.Out.Routes == next.Out.Routes && prevReady {
		return nil // (before the callbacks: no allocation)
	}
	var out []Effect
	emit := func(e *state.TableRoute) {
		if e.Wanted() {
			out = append(out, ReplaceRoute{Route: *e.Target(), Gen: e.Gen})
		} else {
			out = append(out, RemoveRoute{Prefix: e.Prefix, Gen: e.Gen})
		}
	}
	if !prevReady {
		next.Out.Routes.Range(func(_ string, e *state.TableRoute) bool {
			if e.Phase == state.RoutePhasePending {
				emit(e)
			}
			return true
		})
		return out
	}
	pmap.Diff(prev.Out.Routes, next.Out.Routes, same, func(_ string, p *state.TableRoute, had bool, n *state.TableRoute, has bool) {
		if !has || n.Phase != state.RoutePhasePending {
			return
		}
		if !had || p.Gen != n.Gen || n.Retry > p.Retry {
			emit(n)
		}
	})
	return out
}
