package vpp

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

const ourSource = 23

func tableExecutor(t *testing.T, retvals ...int32) (*fakeVPP, *Executor) {
	f := newFakeVPP(t, retvals...)
	e := newExecutor(f.conn, nil)
	e.source.Store(ourSource)
	return f, e
}

func tr(s string) state.Route {
	prefix, rest, _ := strings.Cut(s, " ")
	r := state.Route{Prefix: netip.MustParsePrefix(prefix), Drop: rest == "drop"}
	if !r.Drop {
		for _, a := range strings.Split(strings.TrimPrefix(rest, "via "), ",") {
			r.Via = append(r.Via, netip.MustParseAddr(a))
		}
	}
	return state.NormalRoute(r)
}

func pfx(s string) ip_types.Prefix { return prefix(netip.MustParsePrefix(s)) }

// via is the path every next hop becomes: sw_if_index ~0 (resolved by the
// FIB), weight 1, the family's proto, no labels.
func via(s string) fib_types.FibPath {
	a := netip.MustParseAddr(s)
	proto := fib_types.FIB_API_PATH_NH_PROTO_IP4
	if a.Is6() {
		proto = fib_types.FIB_API_PATH_NH_PROTO_IP6
	}
	return fib_types.FibPath{SwIfIndex: ^uint32(0), TableID: 0, RpfID: 0, Weight: 1, Preference: 0,
		Type: fib_types.FIB_API_PATH_TYPE_NORMAL, Flags: fib_types.FIB_API_PATH_FLAG_NONE, Proto: proto,
		Nh: fib_types.FibPathNh{Address: address(a).Un}}
}

func drop(proto fib_types.FibPathNhProto) fib_types.FibPath {
	return fib_types.FibPath{SwIfIndex: ^uint32(0), Weight: 1, Type: fib_types.FIB_API_PATH_TYPE_DROP,
		Flags: fib_types.FIB_API_PATH_FLAG_NONE, Proto: proto}
}

// TestReplaceMessage: every field of the ip_route_add_del_v2 a route
// becomes (docs/routes.md §9.7): is_add=1, is_multipath=0 (replace), table
// 0, our source, the paths in next-hop order.
func TestReplaceMessage(t *testing.T) {
	tests := []struct {
		route string
		paths []fib_types.FibPath
	}{
		{"10.244.2.0/26 via 10.0.0.2", []fib_types.FibPath{via("10.0.0.2")}},
		{"10.244.3.0/26 via 10.0.0.3,10.0.0.2", []fib_types.FibPath{via("10.0.0.2"), via("10.0.0.3")}},
		{"10.244.1.0/26 drop", []fib_types.FibPath{drop(fib_types.FIB_API_PATH_NH_PROTO_IP4)}},
		{"fd10:2::/80 via fd00::2", []fib_types.FibPath{via("fd00::2")}},
		{"fd10:3::/80 via fd00::3,fd00::2", []fib_types.FibPath{via("fd00::2"), via("fd00::3")}},
		{"fd10:1::/80 drop", []fib_types.FibPath{drop(fib_types.FIB_API_PATH_NH_PROTO_IP6)}},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.route, " ", "-"), func(t *testing.T) {
			f, e := tableExecutor(t)
			r := tr(tt.route)
			if err := e.Replace(context.Background(), r); err != nil {
				t.Fatalf("Replace: %v", err)
			}
			want := []api.Message{&ip.IPRouteAddDelV2{IsAdd: true, IsMultipath: false, Route: ip.IPRouteV2{
				TableID: 0, StatsIndex: 0, Prefix: pfx(r.Prefix.String()), NPaths: uint8(len(tt.paths)),
				Src: ourSource, Paths: tt.paths}}}
			if diff := cmp.Diff(want, f.requestsSent()); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeleteMessage: is_add=0 of our source's entry, no paths; absent is
// success, another refusal is wrapped once with the prefix.
func TestDeleteMessage(t *testing.T) {
	f, e := tableExecutor(t, 0, -6, -3)
	p := netip.MustParsePrefix("10.244.2.0/26")
	for i, wantErr := range []string{"", "", "delete route 10.244.2.0/26: VPP retval -3 (No such FIB / VRF)"} {
		err := e.Delete(context.Background(), p)
		if got := errString(err); got != wantErr {
			t.Errorf("Delete #%d: error %q, want %q", i+1, got, wantErr)
		}
	}
	msg := &ip.IPRouteAddDelV2{IsAdd: false, IsMultipath: false, Route: ip.IPRouteV2{
		TableID: 0, Prefix: pfx("10.244.2.0/26"), NPaths: 0, Src: ourSource, Paths: []fib_types.FibPath{}}} // decoded: empty, not nil
	if diff := cmp.Diff([]api.Message{msg, msg, msg}, f.requestsSent()); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestReplaceFailureIsWrapped(t *testing.T) {
	_, e := tableExecutor(t, -3)
	err := e.Replace(context.Background(), tr("10.244.1.0/26 drop"))
	if got, want := errString(err), "replace route 10.244.1.0/26 drop: VPP retval -3 (No such FIB / VRF)"; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
	if !errors.Is(err, api.NO_SUCH_FIB) {
		t.Errorf("errors.Is(%v, NO_SUCH_FIB) = false", err)
	}
}

// TestListOwnDumps: one ip_route_v2_dump per family, table 0, filtered on
// our source; details become routes (docs/routes.md §9.6).
func TestListOwnDumps(t *testing.T) {
	f, e := tableExecutor(t)
	f.queueDump(
		&ip.IPRouteV2Details{Route: ip.IPRouteV2{Prefix: pfx("10.244.1.0/26"), NPaths: 1, Src: ourSource,
			Paths: []fib_types.FibPath{drop(fib_types.FIB_API_PATH_NH_PROTO_IP4)}}},
		&ip.IPRouteV2Details{Route: ip.IPRouteV2{Prefix: pfx("10.244.3.0/26"), NPaths: 2, Src: ourSource,
			Paths: []fib_types.FibPath{via("10.0.0.3"), via("10.0.0.2")}}},
	)
	f.queueDump(&ip.IPRouteV2Details{Route: ip.IPRouteV2{Prefix: pfx("fd10:2::/80"), NPaths: 1, Src: ourSource,
		Paths: []fib_types.FibPath{via("fd00::2")}}})
	got := effects.ListRoutes(context.Background(), e)
	var lines []string
	for _, r := range got.Routes {
		lines = append(lines, r.String())
	}
	want := []string{"10.244.1.0/26 drop", "10.244.3.0/26 via 10.0.0.2,10.0.0.3", "fd10:2::/80 via fd00::2"}
	if diff := cmp.Diff(want, lines); diff != "" || got.Dataplane != "vpp" || got.Error != "" {
		t.Errorf("ListRoutes = %+v (-want +got):\n%s", got, diff)
	}
	wantMsgs := []api.Message{
		&ip.IPRouteV2Dump{Src: ourSource, Table: ip.IPTable{TableID: 0, IsIP6: false}},
		&ip.IPRouteV2Dump{Src: ourSource, Table: ip.IPTable{TableID: 0, IsIP6: true}},
	}
	if diff := cmp.Diff(wantMsgs, f.requestsSent()); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

// TestWithoutSource: with no source registered nothing is sent and the
// table's routes fail.
func TestWithoutSource(t *testing.T) {
	f := newFakeVPP(t)
	e := newExecutor(f.conn, nil)
	err := e.Replace(context.Background(), tr("10.244.1.0/26 drop"))
	if got, want := errString(err), "replace route 10.244.1.0/26 drop: no FIB source peeragent registered in VPP"; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
	if _, err := e.ListOwn(context.Background()); !errors.Is(err, errNoSource) {
		t.Errorf("ListOwn: %v, want errNoSource", err)
	}
	if n := len(f.requestsSent()); n != 0 {
		t.Errorf("%d messages sent, want none", n)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
