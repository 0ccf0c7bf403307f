package status

import (
	"net/netip"
	"slices"

	v3 "github.com/projectcalico/api/pkg/apis/projectcalico/v3"

	"github.com/peeragent/peeragent/state"
)

// MaxStatusRoutes bounds routesV4 and routesV6 each: a CalicoNodeStatus is
// one object (etcd's limit is 1.5 MB; a route is about 150 bytes of JSON),
// rewritten at every change. The first routes in prefix order are kept.
const MaxStatusRoutes = 500

// routes is the Routes class as calico-node fills it from BIRD's `show
// route` (calico@87c15906 node/pkg/status/populators/route.go): one entry
// per route BIRD knows, "FIB" for the primary one (BIRD's "*": the route
// chosen for forwarding, whether or not the kernel took it), "RIB" for the
// others, the gateway ("N/A" without one), and where it was learned. Here: an own block's drop route is BIRD's static blackhole
// (interface "blackhole", source Static, as bird_aggr.cfg.template L14); a
// neighbor's reachableBy host route is BIRD's static route via the
// gateway (L38, source Static); a learned prefix gives one entry per best
// path, from the neighbor (NodeMesh for a mesh peer, else BGPPeer, with its
// address), FIB when the entry's desired route goes via that path's next
// hop, else RIB (not installed for a §9.2 reason, or under a drop or host
// route). The dataplane's phase is not BIRD's to report: `peeragent routes`
// shows it. Routes held from an earlier run are not BGP's and are
// left out, as are the kernel and direct routes BIRD also lists.
func routes(s state.State) v3.CalicoNodeBGPRouteStatus {
	var out v3.CalicoNodeBGPRouteStatus
	add := func(p netip.Prefix, r v3.CalicoNodeRoute) {
		list := &out.RoutesV4
		if p.Addr().Is6() {
			list = &out.RoutesV6
		}
		if len(*list) < MaxStatusRoutes {
			*list = append(*list, r)
		}
	}
	for _, r := range s.RouteTable() {
		typ := v3.RouteTypeRIB
		if r.Wanted() {
			typ = v3.RouteTypeFIB
		}
		switch {
		case r.Drop:
			add(r.Prefix, v3.CalicoNodeRoute{Type: typ, Destination: r.Prefix.String(), Gateway: "N/A",
				Interface: "blackhole", LearnedFrom: v3.CalicoNodeRouteLearnedFrom{SourceType: v3.RouteSourceTypeStatic}})
		case r.Origin != "learned" && len(r.Via) > 0: // a reachableBy route
			add(r.Prefix, v3.CalicoNodeRoute{Type: typ, Destination: r.Prefix.String(), Gateway: r.Via[0].String(),
				LearnedFrom: v3.CalicoNodeRouteLearnedFrom{SourceType: v3.RouteSourceTypeStatic}})
		}
		for _, p := range r.Paths { // under a drop or host route: not in use, BIRD's RIB
			add(r.Prefix, learnedRoute(s, r, p))
		}
	}
	return out
}

func learnedRoute(s state.State, r state.RouteView, p state.LearnedPath) v3.CalicoNodeRoute {
	out := v3.CalicoNodeRoute{Type: v3.RouteTypeRIB, Destination: r.Prefix.String(), Gateway: "N/A",
		LearnedFrom: v3.CalicoNodeRouteLearnedFrom{SourceType: v3.RouteSourceTypeBGPPeer}}
	if len(p.NextHops) > 0 {
		out.Gateway = p.NextHops[0].Unmap().String()
	}
	if p.Neighbor.IsValid() {
		out.LearnedFrom.PeerIP = p.Neighbor.Unmap().String()
		if n, ok := s.Out.Neighbors.Get(state.AddrKey(p.Neighbor.Unmap())); ok && peerType(s, n.Origin) == v3.BGPPeerTypeNodeMesh {
			out.LearnedFrom.SourceType = v3.RouteSourceTypeNodeMesh
		}
	}
	if r.Wanted() && !r.Drop && r.Origin == "learned" && slices.ContainsFunc(p.NextHops, func(a netip.Addr) bool { return slices.Contains(r.Via, a.Unmap()) }) {
		out.Type = v3.RouteTypeFIB
	}
	return out
}
