package status

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	v3 "github.com/projectcalico/api/pkg/apis/projectcalico/v3"

	"github.com/peeragent/peeragent/state"
)

// routeState is testState with a route table: the own block's drop route
// applied, a route learned from the mesh peer and the global BGPPeer (ECMP,
// applied), one from the global peer not installed, one whose call failed,
// the node-scoped peer's reachableBy route, a held route, and an IPv6
// route from the reverse peer, pending.
func routeState() state.State {
	s := testState()
	addr := netip.MustParseAddr
	put := func(r state.TableRoute, paths ...state.LearnedPath) {
		k := state.PrefixKey(r.Prefix)
		s.Out.Routes = s.Out.Routes.Set(k, &r)
		if len(paths) > 0 {
			s.Inputs.Learned = s.Inputs.Learned.Set(k, &state.BestPaths{Prefix: r.Prefix, Paths: paths})
		}
	}
	from := func(n string, hops ...string) state.LearnedPath {
		p := state.LearnedPath{Neighbor: addr(n)}
		for _, h := range hops {
			p.NextHops = append(p.NextHops, addr(h))
		}
		return p
	}
	put(state.TableRoute{Prefix: netip.MustParsePrefix("10.244.1.0/26"), Drop: true, Origin: "blockaffinity/n1-blk", Phase: state.RoutePhaseApplied},
		from("10.0.0.2", "10.0.0.2")) // another node announces our block: overridden
	put(state.TableRoute{Prefix: netip.MustParsePrefix("10.244.2.0/26"), Via: []netip.Addr{addr("10.0.0.2"), addr("10.0.0.20")},
		Origin: "learned", Phase: state.RoutePhaseApplied}, from("10.0.0.2", "10.0.0.2"), from("10.0.0.9", "10.0.0.20"))
	put(state.TableRoute{Prefix: netip.MustParsePrefix("10.96.0.0/12"), Origin: "learned", NotInstalled: "inside a service range"},
		from("10.0.0.9", "10.0.0.9"))
	put(state.TableRoute{Prefix: netip.MustParsePrefix("10.244.3.0/26"), Via: []netip.Addr{addr("10.0.0.9")}, Origin: "learned",
		Phase: state.RoutePhaseFailed, LastError: "network is unreachable", Attempts: 2}, from("10.0.0.9", "10.0.0.9"))
	put(state.TableRoute{Prefix: netip.MustParsePrefix("10.0.0.10/32"), Via: []netip.Addr{addr("10.0.0.254")}, Origin: "bgppeer/tor", Phase: state.RoutePhaseAdopted})
	put(state.TableRoute{Prefix: netip.MustParsePrefix("10.250.0.0/24"), Held: &state.Route{Prefix: netip.MustParsePrefix("10.250.0.0/24"), Drop: true}, Phase: state.RoutePhaseHeld})
	put(state.TableRoute{Prefix: netip.MustParsePrefix("fd00:244::/122"), Via: []netip.Addr{addr("fd00::2")}, Origin: "learned", Phase: state.RoutePhasePending},
		from("fd00::2", "fd00::2", "fe80::2"))
	return s
}

func TestRoutesClass(t *testing.T) {
	got := Desired(routeState(), []v3.NodeStatusClassType{v3.NodeStatusClassTypeRoutes}, "v").Routes
	static := v3.CalicoNodeRouteLearnedFrom{SourceType: v3.RouteSourceTypeStatic}
	mesh := func(ip string) v3.CalicoNodeRouteLearnedFrom {
		return v3.CalicoNodeRouteLearnedFrom{SourceType: v3.RouteSourceTypeNodeMesh, PeerIP: ip}
	}
	peer := func(ip string) v3.CalicoNodeRouteLearnedFrom {
		return v3.CalicoNodeRouteLearnedFrom{SourceType: v3.RouteSourceTypeBGPPeer, PeerIP: ip}
	}
	want := v3.CalicoNodeBGPRouteStatus{
		RoutesV4: []v3.CalicoNodeRoute{
			{Type: v3.RouteTypeFIB, Destination: "10.0.0.10/32", Gateway: "10.0.0.254", LearnedFrom: static},
			{Type: v3.RouteTypeRIB, Destination: "10.96.0.0/12", Gateway: "10.0.0.9", LearnedFrom: peer("10.0.0.9")},
			{Type: v3.RouteTypeFIB, Destination: "10.244.1.0/26", Gateway: "N/A", Interface: "blackhole", LearnedFrom: static},
			{Type: v3.RouteTypeRIB, Destination: "10.244.1.0/26", Gateway: "10.0.0.2", LearnedFrom: mesh("10.0.0.2")},
			{Type: v3.RouteTypeFIB, Destination: "10.244.2.0/26", Gateway: "10.0.0.2", LearnedFrom: mesh("10.0.0.2")},
			{Type: v3.RouteTypeFIB, Destination: "10.244.2.0/26", Gateway: "10.0.0.20", LearnedFrom: peer("10.0.0.9")},
			{Type: v3.RouteTypeFIB, Destination: "10.244.3.0/26", Gateway: "10.0.0.9", LearnedFrom: peer("10.0.0.9")}, // chosen; its call failed
		},
		RoutesV6: []v3.CalicoNodeRoute{
			{Type: v3.RouteTypeFIB, Destination: "fd00:244::/122", Gateway: "fd00::2", LearnedFrom: peer("fd00::2")}, // chosen; call pending
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Routes class (-want +got):\n%s", diff)
	}
	if other := Desired(routeState(), []v3.NodeStatusClassType{v3.NodeStatusClassTypeBGP}, "v"); other.Routes.RoutesV4 != nil {
		t.Errorf("class BGP alone filled routes: %+v", other.Routes)
	}
}

// TestRoutesClassIsBounded: a table larger than MaxStatusRoutes per
// family gives the first MaxStatusRoutes in prefix order.
func TestRoutesClassIsBounded(t *testing.T) {
	s := testState()
	n := MaxStatusRoutes + 7
	for i := range n {
		p := netip.MustParsePrefix(fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256))
		s.Out.Routes = s.Out.Routes.Set(state.PrefixKey(p), &state.TableRoute{Prefix: p, Drop: true, Phase: state.RoutePhaseApplied})
	}
	got := routes(s)
	if len(got.RoutesV4) != MaxStatusRoutes || got.RoutesV4[0].Destination != "10.100.0.0/24" ||
		got.RoutesV4[MaxStatusRoutes-1].Destination != fmt.Sprintf("10.%d.%d.0/24", 100+(MaxStatusRoutes-1)/256, (MaxStatusRoutes-1)%256) {
		t.Errorf("%d routes, first %+v: want the first %d of %d", len(got.RoutesV4), got.RoutesV4[0], MaxStatusRoutes, n)
	}
}
