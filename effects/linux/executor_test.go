package linux

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

func route(s string) state.Route {
	prefix, rest, _ := strings.Cut(s, " ")
	r := state.Route{Prefix: netip.MustParsePrefix(prefix)}
	if rest == "drop" {
		r.Drop = true
		return r
	}
	for _, a := range strings.Split(strings.TrimPrefix(rest, "via "), ",") {
		r.Via = append(r.Via, netip.MustParseAddr(a))
	}
	return r
}

// held is what the kernel holds for a route, in one line: protocol,
// metric, table, type and next hops, as `ip route` shows them.
func held(r netlink.Route) string {
	typ := map[int]string{unix.RTN_UNICAST: "unicast", unix.RTN_BLACKHOLE: "blackhole"}[r.Type]
	s := []string{"proto " + r.Protocol.String(), "metric " + itoa(r.Priority), "table " + itoa(r.Table), typ}
	if r.Gw != nil {
		s = append(s, "via "+r.Gw.String())
	}
	var hops []string
	for _, nh := range r.MultiPath {
		hops = append(hops, nh.Gw.String())
	}
	slices.Sort(hops)
	if len(hops) > 0 {
		s = append(s, "nexthops "+strings.Join(hops, ","))
	}
	return strings.Join(s, " ")
}

func itoa(i int) string { return strconv.Itoa(i) }

func heldAt(t *testing.T, n *testNS, prefix string) []string {
	t.Helper()
	var out []string
	for _, r := range n.routesAt(t, prefix) {
		out = append(out, held(r))
	}
	return out
}

// TestReplaceInstalls: each form of route, in both families, is one
// kernel route in the main table with protocol 201, metric 1024.
func TestReplaceInstalls(t *testing.T) {
	n := newNS(t)
	e := New(n.h, Options{})
	tests := []struct {
		name, route string
		want        string
	}{
		{"v4-one-next-hop", "10.244.2.0/26 via 10.0.0.2", "proto 201 metric 1024 table 254 unicast via 10.0.0.2"},
		{"v4-ecmp", "10.244.3.0/26 via 10.0.0.3,10.0.0.2", "proto 201 metric 1024 table 254 unicast nexthops 10.0.0.2,10.0.0.3"},
		{"v4-drop", "10.244.1.0/26 drop", "proto 201 metric 1024 table 254 blackhole"},
		{"v4-default", "0.0.0.0/0 via 10.0.0.254", "proto 201 metric 1024 table 254 unicast via 10.0.0.254"},
		{"v6-one-next-hop", "fd10:2::/80 via fd00::2", "proto 201 metric 1024 table 254 unicast via fd00::2"},
		{"v6-ecmp", "fd10:3::/80 via fd00::3,fd00::2", "proto 201 metric 1024 table 254 unicast nexthops fd00::2,fd00::3"},
		{"v6-drop", "fd10:1::/80 drop", "proto 201 metric 1024 table 254 blackhole"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := state.NormalRoute(route(tt.route))
			if err := e.Replace(context.Background(), r); err != nil {
				t.Fatalf("Replace: %v", err)
			}
			if diff := cmp.Diff([]string{tt.want}, heldAt(t, n, r.Prefix.String())); diff != "" {
				t.Errorf("kernel holds (-want +got):\n%s", diff)
			}
			if err := e.Replace(context.Background(), r); err != nil {
				t.Fatalf("Replace again (idempotent): %v", err)
			}
			if got := heldAt(t, n, r.Prefix.String()); len(got) != 1 {
				t.Errorf("after a second Replace the kernel holds %q, want one route", got)
			}
		})
	}
}

// TestReplaceChanges: drop↔via and next-hop changes are one replace each,
// leaving exactly the new route (docs/routes.md §9.7 rule 1).
func TestReplaceChanges(t *testing.T) {
	n := newNS(t)
	e := New(n.h, Options{})
	for _, family := range []struct{ prefix, a, b string }{
		{"10.244.5.0/26", "10.0.0.2", "10.0.0.3"},
		{"fd10:5::/80", "fd00::2", "fd00::3"},
	} {
		steps := []struct{ route, want string }{
			{family.prefix + " drop", "blackhole"},
			{family.prefix + " via " + family.a, "unicast via " + family.a},
			{family.prefix + " via " + family.a + "," + family.b, "unicast nexthops " + family.a + "," + family.b},
			{family.prefix + " via " + family.b, "unicast via " + family.b},
			{family.prefix + " drop", "blackhole"},
		}
		for _, s := range steps {
			if err := e.Replace(context.Background(), state.NormalRoute(route(s.route))); err != nil {
				t.Fatalf("Replace %s: %v", s.route, err)
			}
			want := []string{"proto 201 metric 1024 table 254 " + s.want}
			if diff := cmp.Diff(want, heldAt(t, n, family.prefix)); diff != "" {
				t.Errorf("after %s the kernel holds (-want +got):\n%s", s.route, diff)
			}
		}
	}
}

// TestForeignRouteLeftAlone: a route of another protocol with our prefix
// and metric is neither replaced nor removed (docs/routes.md §9.7 rule 2);
// one with another metric does not conflict.
func TestForeignRouteLeftAlone(t *testing.T) {
	n := newNS(t)
	e := New(n.h, Options{})
	felix := &netlink.Route{Dst: ipNet("10.244.7.0/26"), Gw: net.ParseIP("10.0.0.5"), Protocol: 80,
		Priority: 1024, Table: unix.RT_TABLE_MAIN}
	if err := n.h.RouteAdd(felix); err != nil {
		t.Fatalf("add the foreign route: %v", err)
	}
	foreign := []string{"proto 80 metric 1024 table 254 unicast via 10.0.0.5"}

	err := e.Replace(context.Background(), route("10.244.7.0/26 drop"))
	if err == nil || !strings.Contains(err.Error(), "replace route 10.244.7.0/26 drop: ") ||
		!strings.Contains(err.Error(), "belongs to protocol 80") {
		t.Errorf("Replace over a proto-80 route: error %v, want a refusal naming protocol 80", err)
	}
	if diff := cmp.Diff(foreign, heldAt(t, n, "10.244.7.0/26")); diff != "" {
		t.Errorf("after the refused Replace the kernel holds (-want +got):\n%s", diff)
	}
	if err := e.Delete(context.Background(), netip.MustParsePrefix("10.244.7.0/26")); err != nil {
		t.Errorf("Delete with only a foreign route there: %v, want success (ours is absent)", err)
	}
	if diff := cmp.Diff(foreign, heldAt(t, n, "10.244.7.0/26")); diff != "" {
		t.Errorf("after Delete the kernel holds (-want +got):\n%s", diff)
	}
	if own, err := e.ListOwn(context.Background()); err != nil || len(own) != 0 {
		t.Errorf("ListOwn = %v, %v; want nothing (the route is not ours)", own, err)
	}

	// Another metric is another key: ours goes beside it.
	felix.Dst, felix.Priority = ipNet("10.244.8.0/26"), 100
	if err := n.h.RouteAdd(felix); err != nil {
		t.Fatalf("add the foreign metric-100 route: %v", err)
	}
	if err := e.Replace(context.Background(), route("10.244.8.0/26 via 10.0.0.2")); err != nil {
		t.Fatalf("Replace beside a metric-100 route: %v", err)
	}
	want := []string{"proto 201 metric 1024 table 254 unicast via 10.0.0.2", "proto 80 metric 100 table 254 unicast via 10.0.0.5"}
	got := heldAt(t, n, "10.244.8.0/26")
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kernel holds (-want +got):\n%s", diff)
	}
	if err := e.Delete(context.Background(), netip.MustParsePrefix("10.244.8.0/26")); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if diff := cmp.Diff(want[1:], heldAt(t, n, "10.244.8.0/26")); diff != "" {
		t.Errorf("after Delete the kernel holds (-want +got):\n%s", diff)
	}
}

// TestDeleteIdempotent: deleting an absent route succeeds, and a drop or
// ECMP route goes entirely.
func TestDeleteIdempotent(t *testing.T) {
	n := newNS(t)
	e := New(n.h, Options{})
	ctx := context.Background()
	for _, s := range []string{"10.244.9.0/26 via 10.0.0.2,10.0.0.3", "fd10:9::/80 drop"} {
		r := state.NormalRoute(route(s))
		if err := e.Delete(ctx, r.Prefix); err != nil {
			t.Errorf("Delete of absent %s: %v", r.Prefix, err)
		}
		if err := e.Replace(ctx, r); err != nil {
			t.Fatalf("Replace %s: %v", s, err)
		}
		for i := range 2 {
			if err := e.Delete(ctx, r.Prefix); err != nil {
				t.Errorf("Delete #%d of %s: %v", i+1, r.Prefix, err)
			}
		}
		if got := heldAt(t, n, r.Prefix.String()); len(got) != 0 {
			t.Errorf("after Delete the kernel holds %q at %s", got, r.Prefix)
		}
	}
}

// TestListOwn: only main-table routes of protocol 201 and metric 1024,
// read back in the form they were installed in.
func TestListOwn(t *testing.T) {
	n := newNS(t)
	e := New(n.h, Options{})
	ctx := context.Background()
	mine := []string{"0.0.0.0/0 via 10.0.0.254", "10.244.1.0/26 drop", "10.244.2.0/26 via 10.0.0.2",
		"10.244.3.0/26 via 10.0.0.2,10.0.0.3", "fd10:1::/80 drop", "fd10:3::/80 via fd00::2,fd00::3"}
	for _, s := range mine {
		if err := e.Replace(ctx, state.NormalRoute(route(s))); err != nil {
			t.Fatalf("Replace %s: %v", s, err)
		}
	}
	others := []*netlink.Route{
		{Dst: ipNet("10.244.4.0/26"), Gw: net.ParseIP("10.0.0.5"), Protocol: 80, Priority: 1024, Table: unix.RT_TABLE_MAIN},
		{Dst: ipNet("10.244.5.0/26"), Gw: net.ParseIP("10.0.0.5"), Protocol: 201, Priority: 99, Table: unix.RT_TABLE_MAIN},
		{Dst: ipNet("10.244.6.0/26"), Gw: net.ParseIP("10.0.0.5"), Protocol: 201, Priority: 1024, Table: 100},
	}
	for _, r := range others {
		r.LinkIndex = n.link.Attrs().Index
		if err := n.h.RouteAdd(r); err != nil {
			t.Fatalf("add %v: %v", r, err)
		}
	}
	got := effects.ListRoutes(ctx, e)
	var lines []string
	for _, r := range got.Routes {
		lines = append(lines, r.String())
	}
	if diff := cmp.Diff(mine, lines); diff != "" || got.Dataplane != "linux" || got.Error != "" {
		t.Errorf("ListRoutes = %+v (-want +got):\n%s", got, diff)
	}
}

// TestNotOnLink: a next hop the kernel cannot reach directly is a failed
// route, wrapped once with the route (decision C6).
func TestNotOnLink(t *testing.T) {
	n := newNS(t)
	e := New(n.h, Options{})
	err := e.Replace(context.Background(), route("10.244.2.0/26 via 192.0.2.9"))
	if err == nil || !strings.HasPrefix(err.Error(), "replace route 10.244.2.0/26 via 192.0.2.9: ") {
		t.Errorf("Replace via an off-link next hop: %v, want a wrapped kernel refusal", err)
	}
	if got := heldAt(t, n, "10.244.2.0/26"); len(got) != 0 {
		t.Errorf("kernel holds %q", got)
	}
}

// TestExecute: one result per (prefix, generation), failures as data;
// reachableBy routes are skipped here.
func TestExecute(t *testing.T) {
	n := newNS(t)
	e := New(n.h, Options{})
	p := netip.MustParsePrefix
	got := e.Execute(context.Background(), []effects.Effect{
		effects.ReplaceRoute{Route: route("10.244.2.0/26 via 10.0.0.2"), Gen: 3},
		effects.ReplaceRoute{Route: route("10.244.3.0/26 via 192.0.2.9"), Gen: 4},
		effects.RemoveRoute{Prefix: p("10.244.4.0/26"), Gen: 5},
	})
	if len(got) != 3 {
		t.Fatalf("Execute returned %d actions, want 3: %#v", len(got), got)
	}
	want := []state.Action{
		state.TableRouteApplied{Prefix: p("10.244.2.0/26"), Gen: 3},
		state.TableRouteApplyFailed{Prefix: p("10.244.3.0/26"), Gen: 4},
		state.TableRouteApplied{Prefix: p("10.244.4.0/26"), Gen: 5},
	}
	if f, ok := got[1].(state.TableRouteApplyFailed); ok {
		if !strings.HasPrefix(f.Error, "replace route 10.244.3.0/26 via 192.0.2.9: ") {
			t.Errorf("failure error %q", f.Error)
		}
		f.Error, f.At = "", time.Time{}
		got[1] = f
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
		cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("Execute (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"proto 201 metric 1024 table 254 unicast via 10.0.0.2"}, heldAt(t, n, "10.244.2.0/26")); diff != "" {
		t.Errorf("kernel holds (-want +got):\n%s", diff)
	}
}

func ipNet(s string) *net.IPNet {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	return n
}

// TestRescanForgetsWhatWasTakenOver: a rescan (docs/routes.md §9.7 rule
// 6) lists what the kernel has and makes it what the executor owns. A
// route of ours someone deleted and replaced with a proto-80 route of the
// same key is no longer ours after the rescan: the next Replace refuses
// it rather than overwrite the other protocol's route (rule 2).
func TestRescanForgetsWhatWasTakenOver(t *testing.T) {
	n := newNS(t)
	e := New(n.h, Options{})
	ctx := context.Background()
	p := netip.MustParsePrefix("10.244.7.0/26")
	if err := e.Replace(ctx, route("10.244.7.0/26 via 10.0.0.2")); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	if err := n.h.RouteDel(&netlink.Route{Dst: ipNet(p.String()), Protocol: DefaultProtocol, Priority: DefaultMetric,
		Table: unix.RT_TABLE_MAIN}); err != nil {
		t.Fatalf("delete our route behind the executor's back: %v", err)
	}
	felix := &netlink.Route{Dst: ipNet(p.String()), Gw: net.ParseIP("10.0.0.5"), Protocol: 80,
		Priority: DefaultMetric, Table: unix.RT_TABLE_MAIN}
	if err := n.h.RouteAdd(felix); err != nil {
		t.Fatalf("add the foreign route: %v", err)
	}
	res := e.Execute(ctx, []effects.Effect{effects.RescanRoutes{Seq: 4}})
	want := []state.Action{state.RoutesRescanned{Seq: 4, Dataplane: "linux"}}
	if diff := cmp.Diff(want, res, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("rescan (-want +got):\n%s", diff)
	}
	err := e.Replace(ctx, route("10.244.7.0/26 via 10.0.0.2"))
	if err == nil || !strings.Contains(err.Error(), "belongs to protocol 80") {
		t.Errorf("Replace after the rescan: %v, want a refusal naming protocol 80", err)
	}
	if diff := cmp.Diff([]string{"proto 80 metric 1024 table 254 unicast via 10.0.0.5"}, heldAt(t, n, p.String())); diff != "" {
		t.Errorf("the kernel holds (-want +got):\n%s", diff)
	}
}
