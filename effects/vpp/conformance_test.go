package vpp

import (
	"context"
	"net/netip"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/adapter/mock"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/core"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/dataplane"
	"github.com/peeragent/peeragent/state"
)

// TestConformance: the VPP executor runs the dataplane conformance suite
// against a mock VPP that keeps a FIB: each ip_route_add_del_v2 must be
// exactly the message its route becomes (is_multipath=0, table 0, our
// source, the paths of via or drop), and dumps answer from that FIB. VPP
// resolves a next hop that is not on-link recursively.
func TestConformance(t *testing.T) {
	dataplane.Run(t, func(t *testing.T) dataplane.Target {
		v := newFibVPP(t)
		attach := func(t *testing.T) effects.Executor {
			e, err := Attach(context.Background(), v.conn, nil)
			if err != nil {
				t.Fatalf("Attach: %v", err)
			}
			return e
		}
		return dataplane.Target{
			Name: "vpp", Exec: attach(t),
			Caps:   dataplane.Capabilities{Table: true, OffLink: dataplane.OffLinkResolved},
			Held:   func(*testing.T) []state.Route { return v.held() },
			Forget: func(_ *testing.T, p netip.Prefix) { v.forget(p) },
			Again:  attach,
		}
	})
}

// fibVPP is govpp's mock adapter as a VPP with one FIB source and a
// table 0 of that source's routes.
type fibVPP struct {
	t       *testing.T
	adapter *mock.VppAdapter
	conn    *core.Connection

	mu     sync.Mutex
	source *fib.FibSource // registered by fib_source_add
	table  map[netip.Prefix]fibEntry
}

type fibEntry struct {
	route state.Route
	msg   ip.IPRouteV2
}

const fibSourceID = 31

func newFibVPP(t *testing.T) *fibVPP {
	t.Helper()
	v := &fibVPP{t: t, table: map[netip.Prefix]fibEntry{}}
	v.adapter, v.conn = mockConn(t, v.reply)
	return v
}

func (v *fibVPP) reply(msg api.Message) api.Message {
	switch msg := msg.(type) {
	case *ip.IPRouteAddDelV2:
		return &ip.IPRouteAddDelV2Reply{Retval: v.addDel(msg)}
	case *fib.FibSourceAdd:
		v.mu.Lock()
		v.source = &fib.FibSource{ID: fibSourceID, Name: msg.Src.Name, Priority: msg.Src.Priority}
		v.mu.Unlock()
		return &fib.FibSourceAddReply{ID: fibSourceID}
	case *fib.FibSourceDump: // details, then the control_ping's reply, from the queue
		v.adapter.MockReply(v.sources()...)
	case *ip.IPRouteV2Dump:
		v.adapter.MockReply(v.dump(msg)...)
	}
	v.adapter.MockReply(&memclnt.ControlPingReply{})
	return nil
}

func (v *fibVPP) sources() []api.Message {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.source == nil {
		return nil
	}
	return []api.Message{&fib.FibSourceDetails{Src: *v.source}}
}

// addDel checks msg is exactly what a replace or delete of its prefix
// becomes, and applies it to the table.
func (v *fibVPP) addDel(msg *ip.IPRouteAddDelV2) int32 {
	v.mu.Lock()
	defer v.mu.Unlock()
	p := prefixOf(msg.Route.Prefix)
	want := ip.IPRouteV2{Prefix: prefix(p.Masked()), Src: fibSourceID, Paths: []fib_types.FibPath{}}
	var r state.Route
	if msg.IsAdd {
		r = state.Route{Prefix: p.Masked()}
		want.Paths = nil
		for _, path := range msg.Route.Paths {
			nh, isDrop := pathHop(path)
			if isDrop {
				r.Drop = true
				want.Paths = append(want.Paths, drop(path.Proto))
				continue
			}
			r.Via = append(r.Via, nh)
			want.Paths = append(want.Paths, via(nh.String()))
		}
		want.NPaths = uint8(len(want.Paths))
	}
	if diff := cmp.Diff(&ip.IPRouteAddDelV2{IsAdd: msg.IsAdd, Route: want}, msg); diff != "" || (r.Drop && len(r.Via) > 0) {
		v.t.Errorf("ip_route_add_del_v2 not as a route of %s becomes (-want +got):\n%s", p, diff)
		return int32(api.INVALID_VALUE)
	}
	if !msg.IsAdd {
		if _, ok := v.table[p]; !ok {
			return int32(api.NO_SUCH_ENTRY)
		}
		delete(v.table, p)
		return 0
	}
	v.table[p] = fibEntry{route: state.NormalRoute(r), msg: msg.Route}
	return 0
}

// pathHop is a normal path's next hop, or isDrop.
func pathHop(p fib_types.FibPath) (nh netip.Addr, isDrop bool) {
	switch {
	case p.Type == fib_types.FIB_API_PATH_TYPE_DROP:
		return netip.Addr{}, true
	case p.Proto == fib_types.FIB_API_PATH_NH_PROTO_IP4:
		return netip.AddrFrom4(p.Nh.Address.GetIP4()), false
	}
	return netip.AddrFrom16(p.Nh.Address.GetIP6()), false
}

func (v *fibVPP) dump(msg *ip.IPRouteV2Dump) []api.Message {
	v.mu.Lock()
	defer v.mu.Unlock()
	if msg.Src != fibSourceID || msg.Table.TableID != 0 {
		v.t.Errorf("ip_route_v2_dump of source %d, table %d: want ours (%d), table 0", msg.Src, msg.Table.TableID, fibSourceID)
	}
	var out []api.Message
	for p, e := range v.table {
		if p.Addr().Is6() == msg.Table.IsIP6 {
			out = append(out, &ip.IPRouteV2Details{Route: e.msg})
		}
	}
	return out
}

func (v *fibVPP) held() []state.Route {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []state.Route
	for _, e := range v.table {
		out = append(out, e.route)
	}
	return out
}

func (v *fibVPP) forget(p netip.Prefix) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.table, p)
}
