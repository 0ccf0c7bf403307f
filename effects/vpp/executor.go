package vpp

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ip"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// callTimeout bounds one request/reply: govpp's default reply timeout is
// zero, which means waiting forever for a VPP that stopped answering.
const callTimeout = 5 * time.Second

// Executor applies route effects to one VPP. The zero value is not
// usable; build it with Connect, New or Disabled. Safe for concurrent use.
type Executor struct {
	conn api.Connection // nil: no VPP configured, every route is skipped (unless link is set)
	log  *slog.Logger
	// source is our FIB source's id (0: none registered, table routes
	// fail); set at each connection (ready, or the link's Run).
	source atomic.Uint32
	close  func() // set when the Executor owns conn
	once   sync.Once

	// link, set by Dial, keeps the connection across VPP restarts; its
	// current connection replaces conn (link.go).
	link *link
	// exec serializes Execute and the replay after a VPP restart, so that
	// a replay never re-adds a route an Execute is deleting.
	exec sync.Mutex
	// applied is every route VPP was last told to have, by destination,
	// replayed after a VPP restart (which forgets them all).
	applied map[netip.Prefix]route
}

var _ effects.Executor = (*Executor)(nil)

// New returns an Executor over conn, which the caller keeps owning (Close
// does not disconnect it). A nil conn gives a disabled Executor.
func New(conn api.Connection, logger *slog.Logger) *Executor {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Executor{conn: conn, log: logger}
}

// Disabled returns the Executor used when no VPP socket is configured:
// it sends nothing and reports every route as skipped.
func Disabled(logger *slog.Logger) *Executor {
	e := New(nil, logger)
	e.log.Info("no VPP configured: reachableBy routes are recorded as skipped")
	return e
}

// Enabled reports whether routes are really sent to VPP.
func (e *Executor) Enabled() bool { return e.conn != nil || e.link != nil }

// connection is the connection to send on, nil while a Dial-made
// Executor is not connected.
func (e *Executor) connection() api.Connection {
	if e.link != nil {
		if c := e.link.cur.Load(); c != nil {
			return c
		}
		return nil
	}
	return e.conn
}

// record keeps what VPP now has for r's destination, for a replay.
func (e *Executor) record(r route) {
	if e.applied == nil {
		e.applied = map[netip.Prefix]route{}
	}
	if r.add {
		e.applied[r.dst] = r
	} else {
		delete(e.applied, r.dst)
	}
}

// Close disconnects from VPP if Connect made the connection; later calls
// do nothing. Routes executed after Close fail with govpp's "not connected".
func (e *Executor) Close() {
	e.once.Do(func() {
		if e.close != nil {
			e.close()
		}
	})
}

// key identifies a result: the reducer matches results by address and
// generation, so there must be one per pair.
type key struct {
	addr netip.Addr
	gen  uint64
}

// Execute applies the route effects of effs in order and returns one
// RouteApplied or RouteApplyFailed per (address, generation) of the
// reachableBy routes, then one TableRouteApplied or TableRouteApplyFailed
// per (prefix, generation) of the route table's entries.
func (e *Executor) Execute(ctx context.Context, effs []effects.Effect) []state.Action {
	e.exec.Lock()
	defer e.exec.Unlock()
	var dp effects.Dataplane
	if e.Enabled() {
		dp = e
	}
	return append(e.executeReachable(ctx, effs), effects.ApplyRoutes(ctx, dp, effs)...)
}

func (e *Executor) executeReachable(ctx context.Context, effs []effects.Effect) []state.Action {
	var order []key
	failures := map[key][]error{}
	for _, eff := range effs {
		r, ok := asRoute(eff)
		if !ok {
			continue
		}
		k := key{r.dst.Addr(), r.gen}
		if _, seen := failures[k]; !seen {
			order = append(order, k)
			failures[k] = nil
		}
		if err := e.apply(ctx, r); err != nil {
			failures[k] = append(failures[k], err)
		} else if e.Enabled() {
			e.record(r)
		}
	}
	out := make([]state.Action, 0, len(order))
	for _, k := range order {
		out = append(out, e.result(k, failures[k]))
	}
	return out
}

func (e *Executor) result(k key, errs []error) state.Action {
	if len(errs) == 0 {
		return state.RouteApplied{Address: k.addr, Gen: k.gen, Skipped: !e.Enabled()}
	}
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return state.RouteApplyFailed{Address: k.addr, Gen: k.gen, Error: strings.Join(msgs, "; ")}
}

// apply sends one route and wraps a failure with the route's identity;
// this is the only place route errors are wrapped.
func (e *Executor) apply(ctx context.Context, r route) error {
	if !e.Enabled() {
		e.log.Debug("VPP not configured, route skipped", "route", r.String(), "gen", r.gen)
		return nil
	}
	if err := e.send(ctx, r); err != nil {
		err = fmt.Errorf("%s: %w", r, err)
		e.log.Warn("VPP route failed", "gen", r.gen, "error", err)
		return err
	}
	e.log.Debug("VPP route applied", "route", r.String(), "gen", r.gen)
	return nil
}

func (e *Executor) send(ctx context.Context, r route) error {
	if err := r.validate(); err != nil {
		return err
	}
	// Checked first because a stream on a cancelled context still sends
	// the request; only waiting for the reply notices the cancellation.
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	conn := e.connection()
	if conn == nil {
		return errNotConnected
	}
	reply := &ip.IPRouteAddDelReply{}
	if err := conn.Invoke(ctx, r.message(), reply); err != nil {
		return err
	}
	switch {
	case reply.Retval == 0:
		return nil
	case !r.add && absent(reply.Retval):
		return nil
	}
	return retvalError(reply.Retval)
}
