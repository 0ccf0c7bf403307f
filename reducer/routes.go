package reducer

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// The route table (docs/routes.md §9): which prefix goes to drop or via
// which next hops. Each prefix is derived on its own from the own blocks,
// the learned best paths, the pools and the node's addresses, so that a
// best-path change re-derives only its prefix.

// markRoute: the route of prefix p must be derived again before the step ends.
func (t *tx) markRoute(p netip.Prefix) { t.routes = append(t.routes, markedRoute{p: p}) }

// markRouteKey is markRoute of p whose state.PrefixKey k is at hand.
func (t *tx) markRouteKey(p netip.Prefix, k string) {
	t.routes = append(t.routes, markedRoute{p: p, k: k})
}

// markedRoute is a prefix to derive again, with its key when known.
type markedRoute struct {
	p netip.Prefix
	k string
}

// compareKeys orders prefixes as their state.PrefixKey do, without making
// the keys: by address (IPv4 first), then length.
func compareKeys(a, b netip.Prefix) int {
	if !a.IsValid() || !b.IsValid() {
		return strings.Compare(state.PrefixKey(a), state.PrefixKey(b))
	}
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// markRoutesInside marks every learned prefix inside c (c itself included).
func (t *tx) markRoutesInside(c netip.Prefix) {
	t.s.Inputs.Learned.RangeFrom(state.PrefixKey(c.Masked()), func(_ string, b *state.BestPaths) bool {
		if b.Prefix.Addr().Is4() != c.Addr().Is4() || !c.Contains(b.Prefix.Addr()) {
			return false
		}
		if b.Prefix.Bits() >= c.Bits() {
			t.markRoute(b.Prefix)
		}
		return true
	})
}

// routesDone finishes the route side of a step: the marked routes are
// derived again (all of them when all), the table becomes live when the
// last of the gating sources and the dataplane listing arrives, and the
// held routes are swept once settled (docs/routes.md §9.6).
func (t *tx) routesDone(all bool) {
	if all {
		t.s.Inputs.Learned.Range(func(_ string, b *state.BestPaths) bool { t.markRoute(b.Prefix); return true })
		t.s.Out.Routes.Range(func(_ string, r *state.TableRoute) bool { t.markRoute(r.Prefix); return true })
		t.s.Index.Origins.Range(func(_ string, o *state.Origins) bool { t.markRoute(o.Prefix); return true })
		t.s.Out.Neighbors.Range(func(_ string, n *state.Neighbor) bool {
			if n.ReachableBy.IsValid() {
				t.markRoute(hostPrefix(n.Address))
			}
			return true
		})
	}
	marked := t.routes
	slices.SortFunc(marked, func(a, b markedRoute) int { return compareKeys(a.p, b.p) })
	marked = slices.CompactFunc(marked, func(a, b markedRoute) bool { return a.p == b.p })
	// Each prefix is derived once, in key order, reading only its own
	// entry of the table: the new entries are one batch. Nothing the loop
	// does changes whether the table is live.
	t.routeEdits = make([]pmap.Edit[*state.TableRoute], 0, len(marked))
	t.subnets = [2]cachedSubnet{} // the node may have changed in this step
	t.ready = t.s.RoutesReady()
	for _, m := range marked {
		if m.k == "" {
			m.k = state.PrefixKey(m.p)
		}
		t.deriveRoute(m.k, m.p)
	}
	t.s.Out.Routes = t.s.Out.Routes.Apply(t.routeEdits)
	t.routes, t.routeEdits = nil, nil
	t.refusedDone()
	if !t.wasReady && t.ready {
		t.goLive()
	}
	t.checkSettled()
}

// deriveRoute decides the route of one prefix: a neighbor's reachableBy
// host route wins (docs/routes.md §9.2 rule 7, §9.7 rule 3), then an
// own-block drop route (§9.3 rule 2), else the learned route (§9.2).
func (t *tx) deriveRoute(k string, p netip.Prefix) {
	old, _ := t.s.Out.Routes.Get(k)
	n := &state.TableRoute{Prefix: p}
	if old != nil {
		c := *old
		n = &c
	}
	n.Drop, n.Via, n.Origin, n.NotInstalled, n.Refused = false, nil, "", "", state.RefusedNone
	if nb := t.reachableBy(p); nb != nil {
		n.Via, n.Origin = []netip.Addr{nb.ReachableBy}, nb.Origin
	} else if name := t.dropRoute(k, p); name != "" {
		n.Drop, n.Origin = true, affinityObject(name)
	} else if b, ok := t.s.Inputs.Learned.Get(k); ok {
		n.Via, n.NotInstalled, n.Refused = t.learnedRoute(k, b)
		n.Origin = "learned"
	}
	var was state.Refusal
	if old != nil {
		was = old.Refused
	}
	t.countRefused(was, n.Refused)
	t.putRoute(k, old, n)
}

// putRoute stores n in place of old (an edit of the step's batch,
// routesDone). A change of the desired route draws
// a new generation and a call (docs/routes.md §10); before the table is
// live nothing is called, and a held route equal to the desired one is
// adopted without a call (§9.6 rule 2).
func (t *tx) putRoute(k string, old, n *state.TableRoute) {
	if !sameWant(old, n) {
		t.s.Routing.Seq++
		n.Gen, n.Attempts, n.LastError, n.Retry, n.RetryAt = t.s.Routing.Seq, 0, "", 0, time.Time{}
		t.clearRouteFailure(old)
		ready := t.ready
		switch {
		case n.Wanted() && ready && state.SameRoute(n.Held, n.Target()):
			n.Phase, n.Held = state.RoutePhaseAdopted, nil
		case n.Wanted():
			n.Phase = state.RoutePhasePending
			if ready {
				n.Held = nil // replaced by the call
			}
		case n.Held != nil:
			n.Phase = state.RoutePhaseHeld
		case ready && old.Wanted():
			n.Phase = state.RoutePhasePending // the removal
		default:
			n.Phase = ""
		}
	}
	if !n.Wanted() && n.Held == nil && n.NotInstalled == "" &&
		n.Phase != state.RoutePhasePending && n.Phase != state.RoutePhaseFailed {
		if old != nil {
			t.routeEdits = append(t.routeEdits, pmap.Edit[*state.TableRoute]{Key: k, Delete: true})
		}
		return
	}
	if old == nil || !tableRouteEqual(old, n) {
		t.routeEdits = append(t.routeEdits, pmap.Edit[*state.TableRoute]{Key: k, Val: n})
	}
}

func sameWant(a, b *state.TableRoute) bool {
	if !a.Wanted() || !b.Wanted() {
		return a.Wanted() == b.Wanted()
	}
	return a.Drop == b.Drop && slices.Equal(a.Via, b.Via)
}

func tableRouteEqual(a, b *state.TableRoute) bool {
	return a.Prefix == b.Prefix && a.Drop == b.Drop && slices.Equal(a.Via, b.Via) && a.Origin == b.Origin &&
		a.NotInstalled == b.NotInstalled && a.Refused == b.Refused && state.SameRoute(a.Held, b.Held) && a.Gen == b.Gen &&
		a.Phase == b.Phase && a.Attempts == b.Attempts && a.LastError == b.LastError && a.Retry == b.Retry
}

// reachableBy is the active neighbor whose reachableBy host route p is
// (docs/semantics.md §3): p is the /32 (/128) of its address.
func (t *tx) reachableBy(p netip.Prefix) *state.Neighbor {
	if p.Bits() != p.Addr().BitLen() {
		return nil
	}
	n, ok := t.s.Out.Neighbors.Get(state.AddrKey(p.Addr()))
	if !ok || !n.Active() || !n.ReachableBy.IsValid() {
		return nil
	}
	return n
}

func hostPrefix(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }

// dropRoute is the affinity that makes p an own block with a drop route
// (docs/routes.md §9.3 rule 1), or "": every own block whose pool needs no
// encapsulation or which is outside every pool, except a /32 (/128).
func (t *tx) dropRoute(k string, p netip.Prefix) string {
	if p.Bits() == p.Addr().BitLen() {
		return ""
	}
	o, ok := t.s.Index.Origins.Get(k)
	if !ok {
		return ""
	}
	own := t.ownAffinities(o)
	if len(own) == 0 {
		return ""
	}
	if pool, _ := t.poolOf(p); pool != nil && !flat(pool) {
		return ""
	}
	return own[0]
}

// flat: the pool asks for no encapsulation at all.
func flat(p *state.IPPool) bool {
	never := func(m string) bool { return m == "" || m == "Never" }
	return never(p.IPIPMode) && never(p.VXLANMode)
}

// learnedRoute is the route of a learned prefix (docs/routes.md §9.2,
// §9.4, §9.8): its next hops, or why it is not installed, and the cause
// when the peer's route is refused (§9.2 rule 8: counted, one problem per
// cause).
func (t *tx) learnedRoute(k string, b *state.BestPaths) ([]netip.Addr, string, state.Refusal) {
	p := b.Prefix
	l := t.local()
	if l == nil || !l.Addr(p.Addr().Is6()).IsValid() {
		return nil, fmt.Sprintf("node has no %s address", family(p)), state.RefusedNone
	}
	if _, own := t.s.Out.Advertised.Get(k); own {
		return nil, "own path", state.RefusedNone
	}
	if insideServiceRange(t.s.Index.ServiceRanges, p) {
		return nil, "inside a service range", state.RefusedNone // docs/routes.md §9.2 rule 5
	}
	sub := t.subnet(l, p.Addr().Is6())
	if cause, why := t.refusedPrefix(p, l, sub); cause != state.RefusedNone {
		return nil, why, cause
	}
	pool, _ := t.poolOf(p)
	var via []netip.Addr
	var bad []string
	self, encap := 0, 0
	for _, path := range b.Paths {
		nh, why := pathNextHop(path.NextHops, p, sub)
		switch {
		case why != "":
			bad = append(bad, why)
		case nh == l.V4 || nh == l.V6:
			self++
		case pool != nil && needsEncap(pool, nh, l):
			encap++
		case via == nil && len(b.Paths) == 1 && path.NextHops[0] == nh:
			via = path.NextHops[:1:1] // shared: the usual single next hop costs no copy
		default:
			via = append(via, nh)
		}
	}
	if len(via) > 0 {
		slices.SortFunc(via, func(a, b netip.Addr) int { return a.Compare(b) })
		via = slices.Compact(via)
		if m := t.s.Options.MaxPaths; m > 0 && len(via) > m {
			via = via[:m]
		}
		return via, "", state.RefusedNone
	}
	switch {
	case encap > 0:
		return nil, fmt.Sprintf("ippool/%s needs ipip/vxlan encapsulation", pool.Name), state.RefusedNone
	case len(bad) > 0:
		return nil, "refused: no usable next hop: " + joinHops(bad), state.RefusedNextHop
	case self > 0:
		return nil, "next hop is this node", state.RefusedNone
	}
	return nil, "no path", state.RefusedNone
}

// pathNextHop is the next hop of one path (docs/routes.md §9.1 rule 2,
// §9.2 rules 2 and 8): the first of its next hops that is a global
// unicast address of p's family, neither special-purpose nor the network
// or broadcast address of the node's subnet sub; else why none is.
func pathNextHop(hops []netip.Addr, p netip.Prefix, sub netip.Prefix) (netip.Addr, string) {
	var whys []string
	for _, h := range hops {
		h = h.Unmap()
		why := ""
		switch {
		case !h.IsValid():
			why = "unparsable"
		case h.Zone() != "" || h.IsLinkLocalUnicast():
			why = "link-local"
		case h.IsUnspecified():
			why = "unspecified"
		case h.Is4() != p.Addr().Is4():
			why = "of the other family"
		default:
			why = badNextHop(h, sub)
		}
		if why == "" {
			return h, ""
		}
		whys = append(whys, fmt.Sprintf("%s (%s)", h, why))
	}
	if len(whys) == 0 {
		return netip.Addr{}, "the path has none"
	}
	return netip.Addr{}, strings.Join(whys, ", ")
}

// needsEncap: the pool asks for encapsulation towards nh (docs/routes.md
// §9.8 rule 1), or its modes are not understood (§11.2: fail closed).
func needsEncap(pool *state.IPPool, nh netip.Addr, l *state.NodeEntry) bool {
	if flat(pool) {
		return false
	}
	for _, m := range []string{pool.IPIPMode, pool.VXLANMode} {
		switch m {
		case "", "Never":
		case "CrossSubnet":
			if !nodeSubnet(l, nh.Is6()).Contains(nh) {
				return true
			}
		default:
			return true
		}
	}
	return (pool.IPIPMode != "" && pool.IPIPMode != "Never" && pool.VXLANMode != "" && pool.VXLANMode != "Never") ||
		(nh.Is6() && pool.IPIPMode != "" && pool.IPIPMode != "Never")
}

// subnet is nodeSubnet of this node l, parsed once per step.
func (t *tx) subnet(l *state.NodeEntry, v6 bool) netip.Prefix {
	i := 0
	if v6 {
		i = 1
	}
	if !t.subnets[i].ok {
		t.subnets[i] = cachedSubnet{p: nodeSubnet(l, v6), ok: true}
	}
	return t.subnets[i].p
}

// cachedSubnet is a subnet subnet has parsed.
type cachedSubnet struct {
	p  netip.Prefix
	ok bool
}

// nodeSubnet is the node's subnet of a family: its address annotation's prefix.
func nodeSubnet(l *state.NodeEntry, v6 bool) netip.Prefix {
	text := l.Spec.IPv4Address
	if v6 {
		text = l.Spec.IPv6Address
	}
	p, err := netip.ParsePrefix(text)
	if err != nil {
		return netip.Prefix{}
	}
	return p.Masked()
}

// hasProblems reports whether the problem bucket bucket+key holds any,
// without making its name (a step over many routes has few problems).
func (t *tx) hasProblems(bucket, key string) bool {
	_, ok := t.s.Out.Problems.Get(bucket + key)
	return ok
}

// clearRouteFailure takes the route old (nil: none), whose call failed
// last, out of the count of its cause.
func (t *tx) clearRouteFailure(old *state.TableRoute) {
	if c := routeCause(old); c != "" {
		t.countRouteFailure(c, old.Prefix, -1)
	}
}

// routeCause is the cause of r's last failed call: its error with the
// prefix taken out, so that 20,000 routes failing alike are one cause
// (docs/routes.md §9.7 rule 3); "" when its last call did not fail.
func routeCause(r *state.TableRoute) string {
	if r == nil || r.LastError == "" {
		return ""
	}
	return strings.ReplaceAll(r.LastError, r.Prefix.String(), "<prefix>")
}

// countRouteFailure adds d (+1 or -1) to the count of cause for the route
// of p and makes the cause's one problem say the count.
func (t *tx) countRouteFailure(cause string, p netip.Prefix, d int) {
	out := &t.s.Out
	if out.RouteFailures == nil {
		out.RouteFailures = pmap.New[state.RouteFailure]()
	}
	f, _ := out.RouteFailures.Get(cause)
	f.Count += d
	switch {
	case d > 0:
		f.Last = p
	case f.Last == p:
		f.Last = netip.Prefix{}
	}
	if f.Count <= 0 {
		out.RouteFailures = out.RouteFailures.Delete(cause)
		t.setProblems(routeFailBucket(cause), nil)
		return
	}
	out.RouteFailures = out.RouteFailures.Set(cause, f)
	t.setProblems(routeFailBucket(cause), []state.Problem{routeFailProblem(cause, f)})
}

// routeFailProblem: one route is named with its error; more are counted,
// with the last that failed as an example.
func routeFailProblem(cause string, f state.RouteFailure) state.Problem {
	if !f.Last.IsValid() {
		return state.Problem{Object: "routes", Reason: fmt.Sprintf("%d routes failed: %s", f.Count, cause)}
	}
	text := strings.ReplaceAll(cause, "<prefix>", f.Last.String())
	if f.Count == 1 {
		return state.Problem{Object: routeObject(f.Last), Reason: text}
	}
	return state.Problem{Object: "routes", Reason: fmt.Sprintf("%d routes failed like %s: %s", f.Count, f.Last, text)}
}
func routeFailBucket(cause string) string { return "routefail/" + cause }
func routeObject(p netip.Prefix) string   { return "route/" + p.String() }
