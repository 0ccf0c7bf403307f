package state

import (
	"net/netip"
	"slices"
)

// RouteView is one entry of the route table as `peeragent routes`, GET
// /routes and the CalicoNodeStatus Routes class show it: the table entry
// (docs/routes.md §9.7) with, for a learned prefix, the best paths it was
// derived from and the neighbor each came from (§9.1).
type RouteView struct {
	*TableRoute
	// Paths are the learned best paths of the prefix (multipath: the
	// equal-best set), whether or not the entry installs them.
	Paths []LearnedPath `json:"paths,omitempty"`
}

// Installed reports whether the dataplane has the entry's desired route.
func (r RouteView) Installed() bool {
	return r.Wanted() && (r.Phase == RoutePhaseApplied || r.Phase == RoutePhaseAdopted)
}

// RouteTable is the route table joined with the learned paths, by prefix
// (learned prefixes always have an entry, installed or not). It costs
// O(entries): for the endpoints and the status writer, never the reducer.
func (s State) RouteTable() []RouteView {
	out := make([]RouteView, 0, s.Out.Routes.Len())
	s.Out.Routes.Range(func(k string, r *TableRoute) bool {
		v := RouteView{TableRoute: r}
		if b, ok := s.Inputs.Learned.Get(k); ok {
			v.Paths = b.Paths
		}
		out = append(out, v)
		return true
	})
	return out
}

// NeighborRoutes counts the learned prefixes a neighbor's best paths
// give (docs/routes.md §9.2): Learned in all, Installed those whose route
// the dataplane has with one of the neighbor's next hops, Refused those
// not installed for a reason (NotInstalled: §9.2's rules; the dataplane's
// call failed; or the prefix's installed route is another one: an own
// block's drop route, a reachableBy route, other neighbors' paths); the
// rest are pending.
type NeighborRoutes struct {
	Learned   int `json:"learned"`
	Installed int `json:"installed"`
	Refused   int `json:"refused"`
}

// RoutesFrom counts the learned prefixes of neighbor addr.
func (s State) RoutesFrom(addr netip.Addr) NeighborRoutes {
	var c NeighborRoutes
	addr = addr.Unmap()
	s.Inputs.Learned.Range(func(k string, b *BestPaths) bool {
		var hops []netip.Addr
		for _, p := range b.Paths {
			if p.Neighbor.Unmap() == addr {
				hops = append(hops, p.NextHops...)
			}
		}
		if hops == nil {
			return true
		}
		c.Learned++
		r, _ := s.Out.Routes.Get(k)
		v := RouteView{TableRoute: r}
		switch {
		case r == nil:
		case v.Installed() && !r.Drop && slices.ContainsFunc(hops, func(a netip.Addr) bool { return slices.Contains(r.Via, a.Unmap()) }):
			c.Installed++
		case r.NotInstalled != "" || r.Phase == RoutePhaseFailed || v.Installed(): // another route won
			c.Refused++
		}
		return true
	})
	return c
}
