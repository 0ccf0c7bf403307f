package reducer

import (
	"net/netip"
	"slices"
	"time"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// A graceful session loss (docs/routes.md §9.5 rule 2). GoBGP v4.8.0 keeps
// a neighbor whose session it lost Idle for 5 s, refusing the restarted
// peer's connections, and no setting reaches that hold; a new FSM has
// none. So when a neighbor's Established session is lost for a graceful
// cause and no path of it can be re-exported by this node, the reducer
// asks the speaker to configure the neighbor anew (Session.Recreate, a
// RecreatePeer) and keeps the neighbor's learned paths itself, marked
// stale, as GoBGP's helper would have: the route table and the dataplane
// do not change. The DeletePeer drops GoBGP's copy; the withdrawals it
// causes reach a prefix whose stale path stays (withStale). The paths go
// with the new session's End-of-RIB of their family when not advertised
// again, when the restart time the neighbor advertised runs out, or when
// the neighbor is removed or reset.

// sessionLost: the Established session of the neighbor at k ended
// (reported by a).
func (t *tx) sessionLost(k string, x *state.Session, a state.SessionStateChanged) {
	addr := a.Address.Unmap()
	n, ok := t.s.Out.Neighbors.Get(k)
	g := a.Graceful
	if g == nil || g.LongLived || !ok || !n.Active() || n.GracefulRestartSeconds == 0 || !t.recreatable(n) {
		t.unstale(addr, nil) // a hard loss drops what an earlier one kept
		return
	}
	x.Recreate++
	var fams []string
	for _, f := range g.Families {
		if slices.Contains(n.Families, f) && (f == "ipv4-unicast" || f == "ipv6-unicast") {
			fams = append(fams, f)
		}
	}
	slices.Sort(fams)
	if g.RestartSeconds == 0 {
		fams = nil
	}
	t.unstale(addr, fams)
	if len(fams) == 0 {
		return
	}
	t.markStale(state.StaleNeighbor{Neighbor: addr, Families: fams, Config: n,
		Until: a.At.Add(time.Duration(g.RestartSeconds) * time.Second)})
}

// recreatable: no path learned from n can be re-exported by this node, so
// that configuring n anew (which withdraws its paths from GoBGP's RIB)
// withdraws nothing from any other neighbor. GoBGP sends an iBGP path to
// no iBGP neighbor unless it reflects: n must be iBGP and not a
// route-reflector client, and every other neighbor too (an eBGP neighbor
// takes iBGP paths, docs/routes.md §8.3 rules 7-9; a client takes
// reflected ones). O(neighbors), once per graceful loss.
func (t *tx) recreatable(n *state.Neighbor) bool {
	ok := true
	t.s.Out.Neighbors.Range(func(_ string, m *state.Neighbor) bool {
		if m.Active() && (m.PeerASN != m.LocalASN || m.RouteReflectorClient) {
			ok = false
		}
		return ok
	})
	return ok && n.PeerASN == n.LocalASN && !n.RouteReflectorClient
}

// markStale marks the learned paths of r.Neighbor in r.Families stale
// and records r (replacing an earlier record). O(learned prefixes).
func (t *tx) markStale(r state.StaleNeighbor) {
	in := &t.s.Inputs
	var edits []pmap.Edit[*state.BestPaths]
	in.Learned.Range(func(k string, b *state.BestPaths) bool {
		if !slices.Contains(r.Families, familyOf(b.Prefix)) {
			return true
		}
		i := slices.IndexFunc(b.Paths, func(p state.LearnedPath) bool { return p.Neighbor == r.Neighbor })
		if i < 0 {
			return true
		}
		r.Prefixes = append(r.Prefixes, k)
		if b.Paths[i].Stale {
			return true
		}
		c := &state.BestPaths{Prefix: b.Prefix, Paths: slices.Clone(b.Paths)}
		c.Paths[i].Stale = true
		edits = append(edits, pmap.Edit[*state.BestPaths]{Key: k, Val: c})
		return true
	})
	in.Learned = in.Learned.Apply(edits)
	r.Paths = len(r.Prefixes)
	t.setStale(r.Neighbor, &r)
}

// unstale drops the stale paths of addr whose family is not in keep, and
// its record with them (keep nil: every one).
func (t *tx) unstale(addr netip.Addr, keep []string) {
	r := t.s.Routing.StaleOf(addr)
	if r == nil {
		return
	}
	in := &t.s.Inputs
	var left []string
	for _, k := range r.Prefixes {
		b, ok := in.Learned.Get(k)
		if !ok {
			continue
		}
		if slices.Contains(keep, familyOf(b.Prefix)) {
			left = append(left, k)
			continue
		}
		paths := slices.DeleteFunc(slices.Clone(b.Paths), func(p state.LearnedPath) bool { return p.Neighbor == addr && p.Stale })
		if len(paths) == len(b.Paths) {
			continue
		}
		if len(paths) == 0 {
			in.Learned = in.Learned.Delete(k)
		} else {
			in.Learned = in.Learned.Set(k, &state.BestPaths{Prefix: b.Prefix, Paths: paths})
		}
		t.markRouteKey(b.Prefix, k)
	}
	var fams []string
	for _, f := range r.Families {
		if slices.Contains(keep, f) {
			fams = append(fams, f)
		}
	}
	if len(fams) == 0 {
		t.setStale(addr, nil)
		return
	}
	c := *r
	c.Families, c.Prefixes, c.Paths = fams, left, len(left)
	t.setStale(addr, &c)
}

// setStale replaces (or, r nil, removes) the record of addr in a new
// slice, sorted by address.
func (t *tx) setStale(addr netip.Addr, r *state.StaleNeighbor) {
	rt := &t.s.Routing
	out := make([]state.StaleNeighbor, 0, len(rt.Stale)+1)
	for _, x := range rt.Stale {
		if x.Neighbor != addr {
			out = append(out, x)
		}
	}
	if r != nil {
		out = append(out, *r)
		slices.SortFunc(out, func(a, b state.StaleNeighbor) int { return a.Neighbor.Compare(b.Neighbor) })
	}
	if len(out) == 0 {
		out = nil
	}
	rt.Stale = out
}

// withStale is a prefix's new paths with the stale paths of its old ones
// that no new path of the same neighbor replaces: a withdrawal caused by
// configuring the neighbor anew leaves them.
func withStale(old, paths []state.LearnedPath) []state.LearnedPath {
	var out []state.LearnedPath
	for _, p := range old {
		if !p.Stale || slices.ContainsFunc(paths, func(q state.LearnedPath) bool { return q.Neighbor == p.Neighbor }) {
			continue
		}
		if out == nil {
			out = slices.Clone(paths)
		}
		out = append(out, p)
	}
	if out == nil {
		return paths
	}
	return out
}

// staleEOR: the new session's End-of-RIB of family ends the wait for it;
// the paths it did not advertise again go.
func (t *tx) staleEOR(addr netip.Addr, family string) {
	r := t.s.Routing.StaleOf(addr)
	if r == nil || !slices.Contains(r.Families, family) {
		return
	}
	t.unstale(addr, slices.DeleteFunc(slices.Clone(r.Families), func(f string) bool { return f == family }))
}

// staleDue drops what waited past its restart time (at a Tick).
func (t *tx) staleDue() {
	for _, r := range slices.Clone(t.s.Routing.Stale) {
		if !t.s.Now.Before(r.Until) {
			t.unstale(r.Neighbor, nil)
		}
	}
}

// staleNeighbors ends the wait of a neighbor removed, held back, or
// configured in a way that resets its session (docs/routes.md §9.5 rule 2).
func (t *tx) staleNeighbors() {
	for _, r := range slices.Clone(t.s.Routing.Stale) {
		n, ok := t.s.Out.Neighbors.Get(state.AddrKey(r.Neighbor))
		if !ok || !n.Active() || !sameSession(r.Config, n) {
			t.unstale(r.Neighbor, nil)
		}
	}
}

// sameSession: a and b differ at most in what changes in place (the
// policy, the prefix limit: effects.Classify) or in bookkeeping.
func sameSession(a, b *state.Neighbor) bool {
	if a == b {
		return true
	}
	x, y := *a, *b
	x.Policy, y.Policy, x.MaxPrefixes, y.MaxPrefixes = state.Policy{}, state.Policy{}, 0, 0
	return x.SameConfig(&y)
}

// familyOf is the unicast family of p.
func familyOf(p netip.Prefix) string {
	if p.Addr().Is4() {
		return "ipv4-unicast"
	}
	return "ipv6-unicast"
}
