package effects

import (
	"slices"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// Diff returns the effects that take the world from prev to next, in a
// fixed order: secret and service watches, the server, then per address (ascending)
// the neighbor's effects in dependency order, a server stop, and last the
// alarm when the earliest deadline changed.
func Diff(prev, next state.State) []Effect {
	return append(calls(prev, next), alarmEffect(prev, next)...)
}

// calls are Diff's effects but the alarm.
func calls(prev, next state.State) []Effect {
	out := watchEffects(prev, next)
	if !next.AllSynced() {
		return out
	}
	baseN, baseS, baseSrv := prev.Out.Neighbors, prev.Out.Sessions, prev.Server
	prevSynced := prev.AllSynced() // (a map lookup per gating kind: asked once)
	if !prevSynced {
		baseN, baseS, baseSrv = nil, nil, state.Server{}
	}
	var stop []Effect
	switch {
	case baseSrv == next.Server && next.ServerRetry > prev.ServerRetry && next.Server != (state.Server{}):
		// The server failed to start: start it again and configure
		// everything on it (AddPeer of an existing peer is an update).
		out = append(out, StartServer{Server: next.Server, Gen: next.Routing.SpeakerGen, Preserved: next.Routing.Preserved})
		baseN, baseS = nil, nil
	case baseSrv == next.Server:
	case baseSrv == state.Server{}:
		out = append(out, StartServer{Server: next.Server, Gen: next.Routing.SpeakerGen, Preserved: next.Routing.Preserved})
	case next.Server == state.Server{}:
		stop = append(stop, StopServer{Old: baseSrv})
	default:
		// The restarted speaker has nothing: configure everything anew.
		out = append(out, RestartServer{Old: baseSrv, New: next.Server, Gen: next.Routing.SpeakerGen})
		baseN, baseS = nil, nil
	}
	// The own paths go in before the neighbors, so that a (re)started
	// server's End-of-RIB follows its whole table (docs/routes.md §9.6 rule
	// 6, §10).
	basePaths, baseSets := prev.Out.Advertised, prev.Out.Sets
	if baseN == nil || baseSrv != next.Server {
		basePaths, baseSets = nil, nil // a started speaker has none
	}
	var pe pathEffects
	if next.Server != (state.Server{}) {
		pe = diffPaths(basePaths, next.Out.Advertised, baseSets, next.Out.Sets, next.Out.PathCalls)
		if basePaths != nil { // else every path is added anyway
			pe.retryPaths(prev.Out.PathCalls, next.Out.PathCalls, next.Out.Advertised)
		}
	}
	out = append(append(out, pe.setAdd...), pe.addPath...)
	for _, k := range changedKeys(baseN, next.Out.Neighbors, baseS, next.Out.Sessions) {
		out = append(out, addrEffects(get(baseN, k), get(next.Out.Neighbors, k), get(baseS, k), get(next.Out.Sessions, k))...)
	}
	out = append(out, pe.delPath...)
	out = append(out, routeEffects(prev, next, prevSynced && prev.Routing.Listed)...)
	out = append(out, pe.setDel...)
	out = append(out, resetOuts(pe.widened, next.Out.Neighbors)...)
	return append(out, stop...)
}

func get[V any](m *pmap.Map[*V], k string) *V {
	if m == nil {
		return nil
	}
	v, _ := m.Get(k)
	return v
}

func same[V any](a, b *V) bool { return a == b }

// changedKeys are the addresses whose neighbor or session differ, found by
// walking only the parts of the maps that are not shared.
func changedKeys(pn, nn *pmap.Map[*state.Neighbor], ps, ns *pmap.Map[*state.Session]) []string {
	keys := appendChanged(nil, pn, nn)
	n := len(keys)
	keys = appendChanged(keys, ps, ns)
	if n != len(keys) && n > 0 {
		slices.Sort(keys)
		keys = slices.Compact(keys)
	}
	return keys
}

// appendChanged appends the keys whose values differ between a and b (by
// pointer). Most steps change one map or neither: an unchanged one costs
// neither a walk nor an allocation (of the callback).
func appendChanged[V any](keys []string, a, b *pmap.Map[*V]) []string {
	if a == b {
		return keys
	}
	pmap.Diff(a, b, same, func(k string, _ *V, _ bool, _ *V, _ bool) {
		keys = append(keys, k)
	})
	return keys
}

func watchEffects(prev, next state.State) []Effect {
	var unwatch, watch []Effect
	if prev.Out.Watches != next.Out.Watches {
		unwatch, watch = secretWatches(prev.Out.Watches, next.Out.Watches, next.Options.Namespace)
	}
	switch { // docs/routes.md §8.4, §10
	case prev.Out.ServiceWatch && !next.Out.ServiceWatch:
		unwatch = append(unwatch, UnwatchServices{})
	case next.Out.ServiceWatch && !prev.Out.ServiceWatch:
		watch = append(watch, WatchServices{})
	}
	return append(unwatch, watch...)
}

// secretWatches are the Secret watches to stop and to start.
func secretWatches(prev, next *pmap.Map[struct{}], ns string) (unwatch, watch []Effect) {
	pmap.Diff(prev, next, func(_, _ struct{}) bool { return true },
		func(name string, _ struct{}, had bool, _ struct{}, has bool) {
			if had && !has {
				unwatch = append(unwatch, UnwatchSecret{Namespace: ns, Name: name})
			} else if has && !had {
				watch = append(watch, WatchSecret{Namespace: ns, Name: name})
			}
		})
	return unwatch, watch
}

// addrEffects: what one address needs, from the neighbors and sessions
// before and after. Only active (not held back) neighbors exist in the
// speaker.
func addrEffects(pn, nn *state.Neighbor, ps, ns *state.Session) []Effect {
	var gen uint64
	if ns != nil {
		gen = ns.Gen
	}
	var out []Effect
	switch old, cur := activeOrNil(pn), activeOrNil(nn); {
	case old != nil && cur == nil:
		out = removal(old, deleteGen(gen, ps))
	case old == nil && cur != nil:
		out = addition(cur, gen)
	case old != nil && cur != nil:
		if old != cur { // one neighbor value: nothing changed (Classify formats every field)
			out = change(old, cur, gen)
		}
		if !toSpeaker(out) && ps != nil && ns != nil && ps.Gen != ns.Gen {
			out = append(out, UpdatePeer{Old: old, New: cur, Gen: gen})
		}
	}
	if len(out) == 0 && ps != nil && ns != nil && ns.Retry > ps.Retry {
		out = retry(cur(nn), ns)
	}
	if ps != nil && ns != nil && ns.Recreate > ps.Recreate && cur(nn) != nil && cur(pn) != nil {
		out = append(out, RecreatePeer{Addr: nn.Address}) // docs/routes.md §9.5 rule 2
	}
	return out
}

// toSpeaker reports whether effs hold a GoBGP call, whose result confirms
// the generation. A new generation with no call (a change of bookkeeping
// alone) needs a no-change UpdatePeer, or the session would wait for a
// PeerApplied that no executor sends.
func toSpeaker(effs []Effect) bool {
	for _, e := range effs {
		switch e.(type) {
		case AddPeer, UpdatePeer, DeletePeer, SetPolicy, DeletePolicy:
			return true
		}
	}
	return false
}

func cur(n *state.Neighbor) *state.Neighbor { return activeOrNil(n) }

func activeOrNil(n *state.Neighbor) *state.Neighbor {
	if n.Active() {
		return n
	}
	return nil
}

func deleteGen(gen uint64, ps *state.Session) uint64 {
	if gen == 0 && ps != nil {
		return ps.Gen
	}
	return gen
}

func addition(n *state.Neighbor, gen uint64) []Effect {
	var out []Effect
	if !n.Policy.IsZero() {
		out = append(out, SetPolicy{Addr: n.Address, Policy: n.Policy, Gen: gen})
	}
	return append(out, AddPeer{Neighbor: n, Gen: gen})
}

func removal(n *state.Neighbor, gen uint64) []Effect {
	out := []Effect{DeletePeer{Addr: n.Address, Gen: gen}}
	if !n.Policy.IsZero() {
		out = append(out, DeletePolicy{Addr: n.Address, Gen: gen})
	}
	return out
}

func change(old, n *state.Neighbor, gen uint64) []Effect {
	var out []Effect
	if !old.Policy.Equal(n.Policy) {
		if n.Policy.IsZero() {
			out = append(out, DeletePolicy{Addr: n.Address, Gen: gen})
		} else {
			out = append(out, SetPolicy{Addr: n.Address, Policy: n.Policy, Gen: gen})
		}
	}
	if changes, reset := Classify(old, n); len(changes) > 0 {
		out = append(out, UpdatePeer{Old: old, New: n, Gen: gen, Changes: changes, Reset: reset})
	}
	return out
}

// retry re-issues what a failed generation needed: the whole neighbor
// (from what the speaker last confirmed) or its deletion.
func retry(n *state.Neighbor, s *state.Session) []Effect {
	var out []Effect
	switch {
	case s.Phase == state.PhaseFailed && n == nil:
		out = append(out, DeletePeer{Addr: s.Address, Gen: s.Gen})
		if s.Applied != nil && !s.Applied.Policy.IsZero() {
			out = append(out, DeletePolicy{Addr: s.Address, Gen: s.Gen})
		}
	case s.Phase == state.PhaseFailed && s.Applied == nil:
		out = addition(n, s.Gen)
	case s.Phase == state.PhaseFailed:
		out = change(s.Applied, n, s.Gen)
		if !toSpeaker(out) {
			out = append(out, UpdatePeer{Old: s.Applied, New: n, Gen: s.Gen})
		}
	}
	return out
}
