package vpp

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

var (
	nbr4 = netip.MustParseAddr("10.0.0.9")
	gw4  = netip.MustParseAddr("192.168.1.1")
	gw4b = netip.MustParseAddr("192.168.1.2")
	nbr6 = netip.MustParseAddr("fd00::9")
	gw6  = netip.MustParseAddr("fd00::1")
)

func host(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }

// The expected wire values, written out byte by byte rather than built
// with the code under test.
var (
	wire10009    = ip_types.AddressUnionIP4(ip_types.IP4Address{10, 0, 0, 9})
	wire19216811 = ip_types.AddressUnionIP4(ip_types.IP4Address{192, 168, 1, 1})
	wire19216812 = ip_types.AddressUnionIP4(ip_types.IP4Address{192, 168, 1, 2})
	wireFd009    = ip_types.AddressUnionIP6(ip_types.IP6Address{0xfd, 0, 14: 0, 15: 9})
	wireFd001    = ip_types.AddressUnionIP6(ip_types.IP6Address{0xfd, 0, 14: 0, 15: 1})
)

// wantMsg is the decoded ip_route_add_del expected on the wire: table 0,
// not multipath, n_paths 1, one normal path via nh with no interface.
func wantMsg(isAdd bool, af ip_types.AddressFamily, dst ip_types.AddressUnion, plen uint8,
	proto fib_types.FibPathNhProto, nh ip_types.AddressUnion) *ip.IPRouteAddDel {
	return &ip.IPRouteAddDel{
		IsAdd:       isAdd,
		IsMultipath: false,
		Route: ip.IPRoute{
			TableID:    0,
			StatsIndex: 0,
			Prefix:     ip_types.Prefix{Address: ip_types.Address{Af: af, Un: dst}, Len: plen},
			NPaths:     1,
			Paths: []fib_types.FibPath{{
				SwIfIndex:  0xffffffff,
				TableID:    0,
				RpfID:      0,
				Weight:     1,
				Preference: 0,
				Type:       fib_types.FIB_API_PATH_TYPE_NORMAL,
				Flags:      fib_types.FIB_API_PATH_FLAG_NONE,
				Proto:      proto,
				Nh:         fib_types.FibPathNh{Address: nh},
				NLabels:    0,
			}},
		},
	}
}

const (
	v4, v6     = ip_types.ADDRESS_IP4, ip_types.ADDRESS_IP6
	nhIP4      = fib_types.FIB_API_PATH_NH_PROTO_IP4
	nhIP6      = fib_types.FIB_API_PATH_NH_PROTO_IP6
	addMsg     = true
	deleteMsg  = false
	noSuchFIB  = -3
	noSuchEnt  = -6
	invalidVal = -7
)

func TestExecuteSendsExactMessages(t *testing.T) {
	tests := []struct {
		name    string
		effs    []effects.Effect
		retvals []int32
		want    []*ip.IPRouteAddDel
		results []state.Action
	}{{
		name:    "add-v4",
		effs:    []effects.Effect{effects.AddRoute{Dst: host(nbr4), Via: gw4, Gen: 7}},
		want:    []*ip.IPRouteAddDel{wantMsg(addMsg, v4, wire10009, 32, nhIP4, wire19216811)},
		results: []state.Action{state.RouteApplied{Address: nbr4, Gen: 7}},
	}, {
		name:    "add-v6",
		effs:    []effects.Effect{effects.AddRoute{Dst: host(nbr6), Via: gw6, Gen: 8}},
		want:    []*ip.IPRouteAddDel{wantMsg(addMsg, v6, wireFd009, 128, nhIP6, wireFd001)},
		results: []state.Action{state.RouteApplied{Address: nbr6, Gen: 8}},
	}, {
		name:    "delete-v4",
		effs:    []effects.Effect{effects.DeleteRoute{Dst: host(nbr4), Via: gw4, Gen: 9}},
		want:    []*ip.IPRouteAddDel{wantMsg(deleteMsg, v4, wire10009, 32, nhIP4, wire19216811)},
		results: []state.Action{state.RouteApplied{Address: nbr4, Gen: 9}},
	}, {
		name:    "delete-v6",
		effs:    []effects.Effect{effects.DeleteRoute{Dst: host(nbr6), Via: gw6, Gen: 10}},
		want:    []*ip.IPRouteAddDel{wantMsg(deleteMsg, v6, wireFd009, 128, nhIP6, wireFd001)},
		results: []state.Action{state.RouteApplied{Address: nbr6, Gen: 10}},
	}, {
		name:    "add-refused-by-vpp",
		effs:    []effects.Effect{effects.AddRoute{Dst: host(nbr4), Via: gw4, Gen: 7}},
		retvals: []int32{noSuchEnt},
		want:    []*ip.IPRouteAddDel{wantMsg(addMsg, v4, wire10009, 32, nhIP4, wire19216811)},
		results: []state.Action{state.RouteApplyFailed{Address: nbr4, Gen: 7,
			Error: "add route 10.0.0.9/32 via 192.168.1.1: VPP retval -6 (No such entry)"}},
	}, {
		name:    "add-v6-refused-by-vpp",
		effs:    []effects.Effect{effects.AddRoute{Dst: host(nbr6), Via: gw6, Gen: 8}},
		retvals: []int32{noSuchFIB},
		want:    []*ip.IPRouteAddDel{wantMsg(addMsg, v6, wireFd009, 128, nhIP6, wireFd001)},
		results: []state.Action{state.RouteApplyFailed{Address: nbr6, Gen: 8,
			Error: "add route fd00::9/128 via fd00::1: VPP retval -3 (No such FIB / VRF)"}},
	}, {
		name:    "delete-absent-route-succeeds",
		effs:    []effects.Effect{effects.DeleteRoute{Dst: host(nbr4), Via: gw4, Gen: 9}},
		retvals: []int32{noSuchEnt},
		want:    []*ip.IPRouteAddDel{wantMsg(deleteMsg, v4, wire10009, 32, nhIP4, wire19216811)},
		results: []state.Action{state.RouteApplied{Address: nbr4, Gen: 9}},
	}, {
		name:    "delete-refused-by-vpp",
		effs:    []effects.Effect{effects.DeleteRoute{Dst: host(nbr6), Via: gw6, Gen: 10}},
		retvals: []int32{noSuchFIB},
		want:    []*ip.IPRouteAddDel{wantMsg(deleteMsg, v6, wireFd009, 128, nhIP6, wireFd001)},
		results: []state.Action{state.RouteApplyFailed{Address: nbr6, Gen: 10,
			Error: "delete route fd00::9/128 via fd00::1: VPP retval -3 (No such FIB / VRF)"}},
	}, {
		name: "gateway-change-gives-one-result",
		effs: []effects.Effect{
			effects.DeleteRoute{Dst: host(nbr4), Via: gw4, Gen: 11},
			effects.AddRoute{Dst: host(nbr4), Via: gw4b, Gen: 11},
		},
		want: []*ip.IPRouteAddDel{
			wantMsg(deleteMsg, v4, wire10009, 32, nhIP4, wire19216811),
			wantMsg(addMsg, v4, wire10009, 32, nhIP4, wire19216812),
		},
		results: []state.Action{state.RouteApplied{Address: nbr4, Gen: 11}},
	}, {
		name: "gateway-change-with-failed-delete-still-adds",
		effs: []effects.Effect{
			effects.DeleteRoute{Dst: host(nbr4), Via: gw4, Gen: 11},
			effects.AddRoute{Dst: host(nbr4), Via: gw4b, Gen: 11},
		},
		retvals: []int32{noSuchFIB, 0},
		want: []*ip.IPRouteAddDel{
			wantMsg(deleteMsg, v4, wire10009, 32, nhIP4, wire19216811),
			wantMsg(addMsg, v4, wire10009, 32, nhIP4, wire19216812),
		},
		results: []state.Action{state.RouteApplyFailed{Address: nbr4, Gen: 11,
			Error: "delete route 10.0.0.9/32 via 192.168.1.1: VPP retval -3 (No such FIB / VRF)"}},
	}, {
		name: "gateway-change-both-failing-names-both",
		effs: []effects.Effect{
			effects.DeleteRoute{Dst: host(nbr4), Via: gw4, Gen: 11},
			effects.AddRoute{Dst: host(nbr4), Via: gw4b, Gen: 11},
		},
		retvals: []int32{noSuchFIB, invalidVal},
		want: []*ip.IPRouteAddDel{
			wantMsg(deleteMsg, v4, wire10009, 32, nhIP4, wire19216811),
			wantMsg(addMsg, v4, wire10009, 32, nhIP4, wire19216812),
		},
		results: []state.Action{state.RouteApplyFailed{Address: nbr4, Gen: 11,
			Error: "delete route 10.0.0.9/32 via 192.168.1.1: VPP retval -3 (No such FIB / VRF); " +
				"add route 10.0.0.9/32 via 192.168.1.2: VPP retval -7 (Invalid value)"}},
	}, {
		name: "mixed-families-are-not-sent",
		effs: []effects.Effect{effects.AddRoute{Dst: host(nbr4), Via: gw6, Gen: 12}},
		results: []state.Action{state.RouteApplyFailed{Address: nbr4, Gen: 12,
			Error: "add route 10.0.0.9/32 via fd00::1: gateway and destination are of different address families"}},
	}, {
		name: "other-effects-are-ignored",
		effs: []effects.Effect{
			effects.StartServer{},
			effects.AddPeer{Neighbor: &state.Neighbor{Address: nbr4}, Gen: 1},
			effects.DeletePeer{Addr: nbr6, Gen: 2},
			effects.WatchSecret{Namespace: "ns", Name: "s"},
		},
	}, {
		name: "one-failure-does-not-stop-the-others",
		effs: []effects.Effect{
			effects.AddPeer{Neighbor: &state.Neighbor{Address: nbr4}, Gen: 7},
			effects.AddRoute{Dst: host(nbr4), Via: gw4, Gen: 7},
			effects.AddRoute{Dst: host(nbr6), Via: gw6, Gen: 8},
		},
		retvals: []int32{invalidVal, 0},
		want: []*ip.IPRouteAddDel{
			wantMsg(addMsg, v4, wire10009, 32, nhIP4, wire19216811),
			wantMsg(addMsg, v6, wireFd009, 128, nhIP6, wireFd001),
		},
		results: []state.Action{
			state.RouteApplyFailed{Address: nbr4, Gen: 7,
				Error: "add route 10.0.0.9/32 via 192.168.1.1: VPP retval -7 (Invalid value)"},
			state.RouteApplied{Address: nbr6, Gen: 8},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vpp := newFakeVPP(t, tt.retvals...)
			got := New(vpp.conn, nil).Execute(context.Background(), tt.effs)
			if diff := cmp.Diff(tt.want, vpp.messages(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("messages sent to VPP (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.results, got, cmpopts.EquateEmpty(), cmp.Comparer(addrEqual)); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		})
	}
}

func addrEqual(a, b netip.Addr) bool { return a == b }

func TestExecuteWithoutVPPSkips(t *testing.T) {
	effs := []effects.Effect{
		effects.AddPeer{Neighbor: &state.Neighbor{Address: nbr4}, Gen: 7},
		effects.AddRoute{Dst: host(nbr4), Via: gw4, Gen: 7},
		effects.DeleteRoute{Dst: host(nbr6), Via: gw6, Gen: 8},
		effects.AddRoute{Dst: host(nbr6), Via: gw6, Gen: 8},
	}
	want := []state.Action{
		state.RouteApplied{Address: nbr4, Gen: 7, Skipped: true},
		state.RouteApplied{Address: nbr6, Gen: 8, Skipped: true},
	}
	tests := []struct {
		name string
		exec *Executor
	}{
		{"disabled-executor", Disabled(nil)},
		{"nil-connection", New(nil, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.exec.Enabled() {
				t.Fatal("Enabled() = true without a connection")
			}
			got := tt.exec.Execute(context.Background(), effs)
			if diff := cmp.Diff(want, got, cmp.Comparer(addrEqual)); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			tt.exec.Close()
		})
	}
}

func TestExecuteTransportFailures(t *testing.T) {
	eff := []effects.Effect{effects.AddRoute{Dst: host(nbr4), Via: gw4, Gen: 7}}
	tests := []struct {
		name    string
		prepare func(*fakeVPP) context.Context
		wantErr string
	}{{
		name: "cancelled-context-sends-nothing",
		prepare: func(*fakeVPP) context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		},
		wantErr: "add route 10.0.0.9/32 via 192.168.1.1: context canceled",
	}, {
		name: "disconnected-vpp",
		prepare: func(f *fakeVPP) context.Context {
			f.conn.Disconnect()
			return context.Background()
		},
		wantErr: "add route 10.0.0.9/32 via 192.168.1.1: not connected to VPP",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vpp := newFakeVPP(t)
			got := New(vpp.conn, nil).Execute(tt.prepare(vpp), eff)
			if len(vpp.messages()) != 0 {
				t.Errorf("sent %d messages, want none", len(vpp.messages()))
			}
			if len(got) != 1 {
				t.Fatalf("got %d results, want 1: %v", len(got), got)
			}
			f, ok := got[0].(state.RouteApplyFailed)
			if !ok || f.Address != nbr4 || f.Gen != 7 || !strings.HasPrefix(f.Error, tt.wantErr) {
				t.Errorf("result = %#v, want RouteApplyFailed{10.0.0.9, 7} with error %q...", got[0], tt.wantErr)
			}
		})
	}
}

// TestExecuteConcurrently: the agent may run batches side by side; each
// caller gets exactly its own results. Meant for -race.
func TestExecuteConcurrently(t *testing.T) {
	vpp := newFakeVPP(t)
	exec := New(vpp.conn, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gen := uint64(100 + i)
			got := exec.Execute(context.Background(), []effects.Effect{effects.AddRoute{Dst: host(nbr4), Via: gw4, Gen: gen}})
			want := []state.Action{state.RouteApplied{Address: nbr4, Gen: gen}}
			if diff := cmp.Diff(want, got, cmp.Comparer(addrEqual)); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		}()
	}
	wg.Wait()
	if n := len(vpp.messages()); n != 8 {
		t.Errorf("sent %d messages, want 8", n)
	}
}
