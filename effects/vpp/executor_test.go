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

// The host routes of neighbors with reachableBy (docs/semantics.md §3):
// route table entries like any other (docs/routes.md §9.7 rule 3).
var (
	nbr4 = netip.MustParseAddr("10.0.0.9")
	gw4  = netip.MustParseAddr("192.168.1.1")
	gw4b = netip.MustParseAddr("192.168.1.2")
	nbr6 = netip.MustParseAddr("fd00::9")
	gw6  = netip.MustParseAddr("fd00::1")
)

func host(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }

func replace(dst netip.Prefix, via netip.Addr, gen uint64) effects.ReplaceRoute {
	return effects.ReplaceRoute{Route: state.Route{Prefix: dst, Via: []netip.Addr{via}}, Gen: gen}
}

func remove(dst netip.Prefix, gen uint64) effects.RemoveRoute {
	return effects.RemoveRoute{Prefix: dst, Gen: gen}
}

// The expected wire values, written out byte by byte rather than built
// with the code under test.
var (
	wire10009    = ip_types.AddressUnionIP4(ip_types.IP4Address{10, 0, 0, 9})
	wire19216811 = ip_types.AddressUnionIP4(ip_types.IP4Address{192, 168, 1, 1})
	wire19216812 = ip_types.AddressUnionIP4(ip_types.IP4Address{192, 168, 1, 2})
	wireFd009    = ip_types.AddressUnionIP6(ip_types.IP6Address{0xfd, 0, 14: 0, 15: 9})
	wireFd001    = ip_types.AddressUnionIP6(ip_types.IP6Address{0xfd, 0, 14: 0, 15: 1})
)

// wantAdd is the decoded ip_route_add_del_v2 expected on the wire for a
// replace: table 0, not multipath (it replaces our source's paths), our
// source, n_paths 1, one normal path via nh with no interface (VPP
// resolves it through the FIB), weight 1.
func wantAdd(af ip_types.AddressFamily, dst ip_types.AddressUnion, plen uint8,
	proto fib_types.FibPathNhProto, nh ip_types.AddressUnion) *ip.IPRouteAddDelV2 {
	return &ip.IPRouteAddDelV2{
		IsAdd:       true,
		IsMultipath: false,
		Route: ip.IPRouteV2{
			TableID:    0,
			StatsIndex: 0,
			Prefix:     ip_types.Prefix{Address: ip_types.Address{Af: af, Un: dst}, Len: plen},
			NPaths:     1,
			Src:        ourSource,
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

// wantDel is the removal of our source's entry: is_add=0, no paths.
func wantDel(af ip_types.AddressFamily, dst ip_types.AddressUnion, plen uint8) *ip.IPRouteAddDelV2 {
	return &ip.IPRouteAddDelV2{IsAdd: false, IsMultipath: false, Route: ip.IPRouteV2{
		TableID: 0, Prefix: ip_types.Prefix{Address: ip_types.Address{Af: af, Un: dst}, Len: plen},
		NPaths: 0, Src: ourSource, Paths: []fib_types.FibPath{}}}
}

const (
	v4, v6     = ip_types.ADDRESS_IP4, ip_types.ADDRESS_IP6
	nhIP4      = fib_types.FIB_API_PATH_NH_PROTO_IP4
	nhIP6      = fib_types.FIB_API_PATH_NH_PROTO_IP6
	noSuchFIB  = -3
	noSuchEnt  = -6
	invalidVal = -7
)

func appliedOK(dst netip.Prefix, gen uint64) state.Action {
	return state.TableRouteApplied{Prefix: dst, Gen: gen}
}

func failed(dst netip.Prefix, gen uint64, err string) state.Action {
	return state.TableRouteApplyFailed{Prefix: dst, Gen: gen, Error: err}
}

// TestExecuteSendsExactMessages: every field of the messages a neighbor's
// host route gives, and one result per (prefix, generation).
func TestExecuteSendsExactMessages(t *testing.T) {
	tests := []struct {
		name    string
		effs    []effects.Effect
		retvals []int32
		want    []*ip.IPRouteAddDelV2
		results []state.Action
	}{{
		name:    "add-v4",
		effs:    []effects.Effect{replace(host(nbr4), gw4, 7)},
		want:    []*ip.IPRouteAddDelV2{wantAdd(v4, wire10009, 32, nhIP4, wire19216811)},
		results: []state.Action{appliedOK(host(nbr4), 7)},
	}, {
		name:    "add-v6",
		effs:    []effects.Effect{replace(host(nbr6), gw6, 8)},
		want:    []*ip.IPRouteAddDelV2{wantAdd(v6, wireFd009, 128, nhIP6, wireFd001)},
		results: []state.Action{appliedOK(host(nbr6), 8)},
	}, {
		name:    "gateway-change-is-one-replace",
		effs:    []effects.Effect{replace(host(nbr4), gw4b, 11)},
		want:    []*ip.IPRouteAddDelV2{wantAdd(v4, wire10009, 32, nhIP4, wire19216812)},
		results: []state.Action{appliedOK(host(nbr4), 11)},
	}, {
		name:    "delete-v4",
		effs:    []effects.Effect{remove(host(nbr4), 9)},
		want:    []*ip.IPRouteAddDelV2{wantDel(v4, wire10009, 32)},
		results: []state.Action{appliedOK(host(nbr4), 9)},
	}, {
		name:    "delete-v6",
		effs:    []effects.Effect{remove(host(nbr6), 10)},
		want:    []*ip.IPRouteAddDelV2{wantDel(v6, wireFd009, 128)},
		results: []state.Action{appliedOK(host(nbr6), 10)},
	}, {
		name:    "add-refused-by-vpp",
		effs:    []effects.Effect{replace(host(nbr4), gw4, 7)},
		retvals: []int32{noSuchEnt},
		want:    []*ip.IPRouteAddDelV2{wantAdd(v4, wire10009, 32, nhIP4, wire19216811)},
		results: []state.Action{failed(host(nbr4), 7, "replace route 10.0.0.9/32 via 192.168.1.1: VPP retval -6 (No such entry)")},
	}, {
		name:    "add-v6-refused-by-vpp",
		effs:    []effects.Effect{replace(host(nbr6), gw6, 8)},
		retvals: []int32{noSuchFIB},
		want:    []*ip.IPRouteAddDelV2{wantAdd(v6, wireFd009, 128, nhIP6, wireFd001)},
		results: []state.Action{failed(host(nbr6), 8, "replace route fd00::9/128 via fd00::1: VPP retval -3 (No such FIB / VRF)")},
	}, {
		name:    "delete-absent-route-succeeds",
		effs:    []effects.Effect{remove(host(nbr4), 9)},
		retvals: []int32{noSuchEnt},
		want:    []*ip.IPRouteAddDelV2{wantDel(v4, wire10009, 32)},
		results: []state.Action{appliedOK(host(nbr4), 9)},
	}, {
		name:    "delete-refused-by-vpp",
		effs:    []effects.Effect{remove(host(nbr6), 10)},
		retvals: []int32{noSuchFIB},
		want:    []*ip.IPRouteAddDelV2{wantDel(v6, wireFd009, 128)},
		results: []state.Action{failed(host(nbr6), 10, "delete route fd00::9/128: VPP retval -3 (No such FIB / VRF)")},
	}, {
		name:    "mixed-families-are-not-sent",
		effs:    []effects.Effect{replace(host(nbr4), gw6, 12)},
		results: []state.Action{failed(host(nbr4), 12, "replace route 10.0.0.9/32 via fd00::1: next hop fd00::1 is not in the prefix's address family")},
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
			replace(host(nbr4), gw4, 7),
			replace(host(nbr6), gw6, 8),
		},
		retvals: []int32{invalidVal, 0},
		want: []*ip.IPRouteAddDelV2{
			wantAdd(v4, wire10009, 32, nhIP4, wire19216811),
			wantAdd(v6, wireFd009, 128, nhIP6, wireFd001),
		},
		results: []state.Action{
			failed(host(nbr4), 7, "replace route 10.0.0.9/32 via 192.168.1.1: VPP retval -7 (Invalid value)"),
			appliedOK(host(nbr6), 8),
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vpp, e := tableExecutor(t, tt.retvals...)
			got := e.Execute(context.Background(), tt.effs)
			if diff := cmp.Diff(tt.want, vpp.messages(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("messages sent to VPP (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.results, got, cmpopts.EquateEmpty(), cmpNet); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		})
	}
}

var cmpNet = cmp.Options{
	cmpopts.IgnoreFields(state.TableRouteApplyFailed{}, "At"), // the time of the failure
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
}

func TestExecuteTransportFailures(t *testing.T) {
	eff := []effects.Effect{replace(host(nbr4), gw4, 7)}
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
		wantErr: "replace route 10.0.0.9/32 via 192.168.1.1: context canceled",
	}, {
		name: "disconnected-vpp",
		prepare: func(f *fakeVPP) context.Context {
			f.conn.Disconnect()
			return context.Background()
		},
		wantErr: "replace route 10.0.0.9/32 via 192.168.1.1: ",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vpp, e := tableExecutor(t)
			got := e.Execute(tt.prepare(vpp), eff)
			if len(vpp.messages()) != 0 {
				t.Errorf("sent %d messages, want none", len(vpp.messages()))
			}
			if len(got) != 1 {
				t.Fatalf("got %d results, want 1: %v", len(got), got)
			}
			f, ok := got[0].(state.TableRouteApplyFailed)
			if !ok || f.Prefix != host(nbr4) || f.Gen != 7 || !strings.HasPrefix(f.Error, tt.wantErr) {
				t.Errorf("result = %#v, want TableRouteApplyFailed{10.0.0.9/32, 7} with error %q...", got[0], tt.wantErr)
			}
		})
	}
}

// TestExecuteConcurrently: the agent may run batches side by side; each
// caller gets exactly its own results. Meant for -race.
func TestExecuteConcurrently(t *testing.T) {
	vpp, exec := tableExecutor(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gen := uint64(100 + i)
			got := exec.Execute(context.Background(), []effects.Effect{replace(host(nbr4), gw4, gen)})
			want := []state.Action{appliedOK(host(nbr4), gen)}
			if diff := cmp.Diff(want, got, cmpNet); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		}()
	}
	wg.Wait()
	if n := len(vpp.messages()); n != 8 {
		t.Errorf("sent %d messages, want 8", n)
	}
}
