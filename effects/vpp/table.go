package vpp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"

	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

var _ effects.Dataplane = (*Executor)(nil)

// Name is the --dataplane value.
func (e *Executor) Name() string { return "vpp" }

// Replace sets this source's paths of r.Prefix to r's, in one
// ip_route_add_del_v2 with is_multipath=0 (docs/routes.md §9.7).
func (e *Executor) Replace(ctx context.Context, r state.Route) error {
	msg, err := e.replaceMessage(r)
	if err == nil {
		err = e.invokeV2(ctx, msg)
	}
	if err != nil {
		err = fmt.Errorf("replace route %s: %w", r, err)
		e.log.Warn("VPP route failed", "error", err)
		return err
	}
	if e.log.Enabled(ctx, slog.LevelDebug) { // String is not free: skip it unless logged
		e.log.Debug("VPP route replaced", "route", r.String())
	}
	return nil
}

// Delete removes this source's entry for p (is_add=0, no paths): a route
// of another source on the same prefix stays. Absent is success.
func (e *Executor) Delete(ctx context.Context, p netip.Prefix) error {
	err := e.ownSource()
	if err == nil {
		err = e.invokeV2(ctx, e.deleteMessage(p))
	}
	if err != nil && !absentErr(err) {
		err = fmt.Errorf("delete route %s: %w", p, err)
		e.log.Warn("VPP route failed", "error", err)
		return err
	}
	return nil
}

// ListOwn is ip_route_v2_dump of table 0 filtered on our source, IPv4
// then IPv6. VPP describes each entry by its best source's paths: where
// a stronger source (the CNI's API routes) also has the prefix, those are
// the paths listed.
func (e *Executor) ListOwn(ctx context.Context) ([]state.Route, error) {
	if err := e.ownSource(); err != nil {
		return nil, err
	}
	var out []state.Route
	for _, v6 := range []bool{false, true} {
		rs, err := e.dump(ctx, v6)
		if err != nil {
			return nil, fmt.Errorf("list routes of source %s: %w", SourceName, err)
		}
		out = append(out, rs...)
	}
	return out, nil
}

func (e *Executor) dump(ctx context.Context, v6 bool) ([]state.Route, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	stream, err := ip.NewServiceClient(e.connection()).IPRouteV2Dump(ctx, e.dumpMessage(v6))
	if err != nil {
		return nil, err
	}
	var out []state.Route
	for {
		d, err := stream.Recv()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if r, ok := fromDetails(d.Route); ok {
			out = append(out, r)
		} else {
			e.log.Warn("VPP route of our source in an unknown form left out of the list", "prefix", prefixOf(d.Route.Prefix))
		}
	}
}

func (e *Executor) ownSource() error {
	switch {
	case e.connection() == nil:
		return errNotConnected
	case e.source.Load() == 0:
		return errNoSource
	}
	return nil
}

func (e *Executor) invokeV2(ctx context.Context, msg *ip.IPRouteAddDelV2) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	reply := &ip.IPRouteAddDelV2Reply{}
	conn := e.connection()
	if conn == nil {
		return errNotConnected
	}
	if err := conn.Invoke(ctx, msg, reply); err != nil {
		return err
	}
	if reply.Retval != 0 {
		return retvalError(reply.Retval)
	}
	return nil
}

// absentErr: a delete VPP answered with NO_SUCH_ENTRY.
func absentErr(err error) bool {
	var rv retvalError
	return errors.As(err, &rv) && absent(int32(rv))
}

func (e *Executor) replaceMessage(r state.Route) (*ip.IPRouteAddDelV2, error) {
	if err := e.ownSource(); err != nil {
		return nil, err
	}
	if !r.Prefix.IsValid() {
		return nil, errors.New("invalid prefix")
	}
	var paths []fib_types.FibPath
	switch {
	case r.Drop:
		paths = []fib_types.FibPath{dropPath(r.Prefix.Addr())}
	case len(r.Via) == 0:
		return nil, errors.New("neither drop nor a next hop")
	}
	for _, a := range r.Via {
		if a.Is4() != r.Prefix.Addr().Is4() {
			return nil, fmt.Errorf("next hop %s is not in the prefix's address family", a)
		}
		paths = append(paths, nextHop(a))
	}
	return &ip.IPRouteAddDelV2{IsAdd: true, IsMultipath: false, Route: ip.IPRouteV2{
		TableID: 0, Prefix: prefix(r.Prefix), NPaths: uint8(len(paths)), Src: uint8(e.source.Load()), Paths: paths,
	}}, nil
}

func (e *Executor) deleteMessage(p netip.Prefix) *ip.IPRouteAddDelV2 {
	return &ip.IPRouteAddDelV2{IsAdd: false, IsMultipath: false, Route: ip.IPRouteV2{
		TableID: 0, Prefix: prefix(p.Masked()), Src: uint8(e.source.Load()),
	}}
}

func (e *Executor) dumpMessage(v6 bool) *ip.IPRouteV2Dump {
	return &ip.IPRouteV2Dump{Src: uint8(e.source.Load()), Table: ip.IPTable{TableID: 0, IsIP6: v6}}
}

func prefix(p netip.Prefix) ip_types.Prefix {
	return ip_types.Prefix{Address: address(p.Addr()), Len: uint8(p.Bits())}
}

// dropPath is FIB_API_PATH_TYPE_DROP in the prefix's family: VPP drops
// what matches, as the kernel's blackhole does.
func dropPath(dst netip.Addr) fib_types.FibPath {
	p := nextHop(dst)
	p.Type = fib_types.FIB_API_PATH_TYPE_DROP
	p.Nh = fib_types.FibPathNh{}
	return p
}

func prefixOf(p ip_types.Prefix) netip.Prefix {
	var a netip.Addr
	if p.Address.Af == ip_types.ADDRESS_IP4 {
		a = netip.AddrFrom4(p.Address.Un.GetIP4())
	} else {
		a = netip.AddrFrom16(p.Address.Un.GetIP6())
	}
	return netip.PrefixFrom(a, int(p.Len))
}

// fromDetails reads a dumped entry back; ok is false for paths this
// agent never adds (interface, label, receive...).
func fromDetails(r ip.IPRouteV2) (state.Route, bool) {
	out := state.Route{Prefix: prefixOf(r.Prefix)}
	for _, p := range r.Paths {
		switch {
		case p.Type == fib_types.FIB_API_PATH_TYPE_DROP:
			out.Drop = true
		case p.Type == fib_types.FIB_API_PATH_TYPE_NORMAL && p.Proto == fib_types.FIB_API_PATH_NH_PROTO_IP4:
			out.Via = append(out.Via, netip.AddrFrom4(p.Nh.Address.GetIP4()))
		case p.Type == fib_types.FIB_API_PATH_TYPE_NORMAL && p.Proto == fib_types.FIB_API_PATH_NH_PROTO_IP6:
			out.Via = append(out.Via, netip.AddrFrom16(p.Nh.Address.GetIP6()))
		default:
			return state.Route{}, false
		}
	}
	if out.Drop == (len(out.Via) > 0) || !out.Prefix.IsValid() {
		return state.Route{}, false
	}
	return state.NormalRoute(out), true
}
