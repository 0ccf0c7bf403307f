package vpp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/core"

	"github.com/peeragent/peeragent/state"
)

// errNotConnected is a route's error while a Dial-made Executor has no
// connection; the route is retried with backoff, and replayed anyway once
// VPP is back if it was applied before.
var errNotConnected = errors.New("not connected to VPP")

// problemSource is the source of the VPP connection's problem in the
// State (state.InputProblemsReported): one problem while disconnected,
// none while connected.
const problemSource = "vpp"

// Reconnection: govpp's own loop tries connectAttempts times, connectEvery
// apart (its socket client waits for the socket file before each try);
// when that fails, the link waits with exponential backoff, from
// minBackoff to maxBackoff, and starts over. govpp's health check (a
// control_ping a second) reports a VPP that stopped or stopped answering,
// and then reconnects by itself.
var (
	connectAttempts = 3
	connectEvery    = 500 * time.Millisecond
	minBackoff      = time.Second
	maxBackoff      = 30 * time.Second
)

// link keeps an Executor's connection to one VPP (docs/semantics.md §7:
// the agent waits for VPP rather than exiting, and never stalls the
// neighbors on it).
type link struct {
	adapter adapter.VppAPI
	target  string
	cur     atomic.Pointer[core.Connection] // connected and checked; nil otherwise
}

// Dial returns an Executor for the VPP API socket at socketPath that is
// not connected yet: Run connects, and keeps it connected across VPP
// restarts. Until then routes fail with "not connected to VPP" (and are
// retried).
func Dial(socketPath string, logger *slog.Logger) *Executor {
	return dialWith(socketclient.NewVppClient(socketPath), socketPath, logger)
}

func dialWith(a adapter.VppAPI, target string, logger *slog.Logger) *Executor {
	e := newExecutor(nil, logger)
	e.link = &link{adapter: a, target: target}
	return e
}

// Run keeps the connection until ctx ends, dispatching the connection's
// problem (state.InputProblemsReported, source "vpp") while VPP is not
// connected and clearing it once it is. When VPP comes back after a
// disconnection (a VPP restart forgets every route), every route VPP was
// told to have is sent again, and each that fails is dispatched as a
// TableRouteApplyFailed of its generation. It returns nil when ctx ends; on an
// Executor not made by Dial it returns at once.
func (e *Executor) Run(ctx context.Context, dispatch func(state.Action)) error {
	l := e.link
	if l == nil {
		return nil
	}
	problem := func(format string, args ...any) {
		var probs []state.Problem
		if format != "" {
			probs = []state.Problem{{Object: "vpp", Reason: fmt.Sprintf(format, args...)}}
			e.log.Warn("VPP connection", "problem", probs[0].Reason)
		}
		dispatch(state.InputProblemsReported{Source: problemSource, Problems: probs})
	}
	problem("not connected to VPP at %s yet", l.target)
	delay, connectedOnce := minBackoff, false
	for {
		conn, events, err := core.AsyncConnect(l.adapter, connectAttempts, connectEvery)
		if err != nil {
			problem("connect to VPP at %s: %v", l.target, err)
		} else {
			stopped, connected := e.follow(ctx, conn, events, &connectedOnce, problem, dispatch)
			l.cur.Store(nil)
			conn.Disconnect()
			if stopped {
				return nil
			}
			if connected {
				delay = minBackoff
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(2*delay, maxBackoff)
	}
}

// follow handles one govpp connection's events until it gives up or ctx
// ends (stopped); connected says whether it was connected meanwhile.
func (e *Executor) follow(ctx context.Context, conn *core.Connection, events chan core.ConnectionEvent,
	connectedOnce *bool, problem func(string, ...any), dispatch func(state.Action)) (stopped, connected bool) {
	l := e.link
	for {
		select {
		case <-ctx.Done():
			return true, connected
		case ev := <-events:
			switch ev.State {
			case core.Connected:
				if err := compatible(conn); err != nil {
					problem("VPP at %s: %v", l.target, err)
					continue
				}
				l.cur.Store(conn)
				problem("")
				e.log.Info("connected to VPP", "socket", l.target)
				// Not on this loop: a VPP slow to answer must not stall it.
				// The routes go again only once the source is registered.
				go func(again bool) {
					e.registerOn(ctx, conn)
					if again {
						e.replay(ctx, dispatch)
					}
				}(*connectedOnce)
				*connectedOnce, connected = true, true
			case core.Disconnected, core.NotResponding:
				l.cur.Store(nil)
				problem("VPP at %s %s: reconnecting; routes are sent again once it is back", l.target, eventText(ev))
			case core.Failed:
				l.cur.Store(nil)
				problem("VPP at %s not reachable: %v; retrying with backoff", l.target, ev.Error)
				return false, connected
			}
		}
	}
}

func eventText(ev core.ConnectionEvent) string {
	what := "disconnected"
	if ev.State == core.NotResponding {
		what = "stopped answering"
	}
	if ev.Error != nil {
		what += " (" + ev.Error.Error() + ")"
	}
	return what
}

// compatible checks that VPP speaks the route table's messages (same
// CRCs): the FIB source ones and ip_route_add_del_v2 (docs/routes.md §9.7).
func compatible(conn *core.Connection) error {
	ch, err := conn.NewAPIChannel()
	if err != nil {
		return err
	}
	defer ch.Close()
	if err := ch.CheckCompatiblity(routeMessages...); err != nil {
		return fmt.Errorf("does not support the FIB source and ip_route_add_del_v2 messages: %w", err)
	}
	return nil
}

// replay sends every recorded route again, in prefix order, after a VPP
// restart; a failure is a TableRouteApplyFailed of the route's
// generation (and the retry sends it again).
func (e *Executor) replay(ctx context.Context, dispatch func(state.Action)) {
	e.exec.Lock()
	defer e.exec.Unlock()
	rs := make([]applied, 0, len(e.applied))
	for _, r := range e.applied {
		rs = append(rs, r)
	}
	slices.SortFunc(rs, func(a, b applied) int { return comparePrefix(a.route.Prefix, b.route.Prefix) })
	failed := 0
	for _, r := range rs {
		if err := e.Replace(ctx, r.route); err != nil {
			failed++
			dispatch(state.TableRouteApplyFailed{Prefix: r.route.Prefix, Gen: r.gen, Error: err.Error(), At: time.Now()})
		}
	}
	e.log.Info("VPP routes sent again after a reconnection", "routes", len(rs), "failed", failed)
}

func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// registerOn registers our FIB source on a (re)connected VPP (a restarted
// VPP has forgotten it; one that stayed up keeps it, and registerSource
// finds it again), for the route table (docs/routes.md §9.7).
func (e *Executor) registerOn(ctx context.Context, conn *core.Connection) {
	src, err := registerSource(ctx, conn)
	if err == nil {
		e.source.Store(uint32(src))
		return
	}
	e.source.Store(0)
	e.log.Warn("VPP lacks our FIB source: the route table cannot be installed", "error", err)
}
