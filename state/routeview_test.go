package state

import (
	"net/netip"
	"testing"
)

func TestRoutesFromAndRouteTable(t *testing.T) {
	s := New("n1", Options{})
	a, b := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.9")
	put := func(r TableRoute, paths ...LearnedPath) {
		k := PrefixKey(r.Prefix)
		s.Out.Routes = s.Out.Routes.Set(k, &r)
		if len(paths) > 0 {
			s.Inputs.Learned = s.Inputs.Learned.Set(k, &BestPaths{Prefix: r.Prefix, Paths: paths})
		}
	}
	pa, pb := LearnedPath{Neighbor: a, NextHops: []netip.Addr{a}}, LearnedPath{Neighbor: b, NextHops: []netip.Addr{b}}
	put(TableRoute{Prefix: netip.MustParsePrefix("10.1.0.0/24"), Via: []netip.Addr{a, b}, Phase: RoutePhaseApplied, Origin: "learned"}, pa, pb)
	put(TableRoute{Prefix: netip.MustParsePrefix("10.2.0.0/24"), Origin: "learned", NotInstalled: "inside a service range"}, pb)
	put(TableRoute{Prefix: netip.MustParsePrefix("10.3.0.0/24"), Via: []netip.Addr{b}, Phase: RoutePhaseFailed, Origin: "learned"}, pb)
	put(TableRoute{Prefix: netip.MustParsePrefix("10.4.0.0/24"), Via: []netip.Addr{b}, Phase: RoutePhasePending, Origin: "learned"}, pb)
	put(TableRoute{Prefix: netip.MustParsePrefix("10.5.0.0/24"), Drop: true, Phase: RoutePhaseAdopted, Origin: "blockaffinity/x"}, pb)
	put(TableRoute{Prefix: netip.MustParsePrefix("10.6.0.0/24"), Via: []netip.Addr{a}, Phase: RoutePhaseApplied, Origin: "learned"}, pa)

	for _, c := range []struct {
		name string
		addr netip.Addr
		want NeighborRoutes
	}{
		{"neighbor-a", a, NeighborRoutes{Learned: 2, Installed: 2}},
		{"neighbor-b-refused-failed-overridden-pending", b, NeighborRoutes{Learned: 5, Installed: 1, Refused: 3}},
		{"mapped-address", netip.AddrFrom16(a.As16()), NeighborRoutes{Learned: 2, Installed: 2}},
		{"no-routes", netip.MustParseAddr("10.0.0.99"), NeighborRoutes{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := s.RoutesFrom(c.addr); got != c.want {
				t.Errorf("RoutesFrom(%s) = %+v, want %+v", c.addr, got, c.want)
			}
		})
	}
	rt := s.RouteTable()
	if len(rt) != 6 || rt[0].Prefix.String() != "10.1.0.0/24" || len(rt[0].Paths) != 2 || !rt[0].Installed() || rt[1].Installed() {
		t.Errorf("RouteTable: %+v", rt)
	}
}
