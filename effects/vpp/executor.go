package vpp

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"go.fd.io/govpp/api"

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
	// applied is every route VPP was last told to have, by prefix,
	// replayed after a VPP restart (which forgets them all).
	applied map[netip.Prefix]applied
}

// applied is a route VPP accepted, and the generation it was for.
type applied struct {
	route state.Route
	gen   uint64
}

var (
	_ effects.Executor = (*Executor)(nil)
	_ effects.Runner   = (*Executor)(nil) // Run: the link of a Dial-made executor
)

// New returns an Executor over conn, which the caller keeps owning (Close
// does not disconnect it). A nil conn gives a disabled Executor.
func New(conn api.Connection, logger *slog.Logger) *Executor {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Executor{conn: conn, log: logger}
}

// Attach returns an Executor over conn, which the caller keeps owning,
// with our FIB source registered in that VPP (found, or added): ready for
// the route table (docs/routes.md §9.7).
func Attach(ctx context.Context, conn api.Connection, logger *slog.Logger) (*Executor, error) {
	src, err := registerSource(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("register FIB source %s: %w", SourceName, err)
	}
	e := New(conn, logger)
	e.source.Store(uint32(src))
	return e, nil
}

// Disabled returns the Executor used when no VPP socket is configured:
// it sends nothing and reports every route as skipped.
func Disabled(logger *slog.Logger) *Executor {
	e := New(nil, logger)
	e.log.Info("no VPP configured: routes are recorded as skipped")
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

// Close disconnects from VPP if Connect made the connection; later calls
// do nothing. Routes executed after Close fail with govpp's "not connected".
func (e *Executor) Close() {
	e.once.Do(func() {
		if e.close != nil {
			e.close()
		}
	})
}

// Execute applies the route table effects of effs (docs/routes.md §9.7)
// and returns one TableRouteApplied or TableRouteApplyFailed per (prefix,
// generation); disabled, every route is reported as skipped. What VPP
// accepted is recorded for the replay after a VPP restart.
func (e *Executor) Execute(ctx context.Context, effs []effects.Effect) []state.Action {
	e.exec.Lock()
	defer e.exec.Unlock()
	var dp effects.Dataplane
	if e.Enabled() {
		dp = e
	}
	out := effects.ApplyRoutes(ctx, dp, effs)
	if dp != nil {
		e.record(effs, out)
	}
	return out
}

// record keeps, per prefix, the route VPP now has from this source (the
// last replace or remove of each prefix that VPP accepted), with its
// generation, for a replay.
func (e *Executor) record(effs []effects.Effect, results []state.Action) {
	type pk struct {
		prefix netip.Prefix
		gen    uint64
	}
	ok := map[pk]bool{}
	for _, a := range results {
		if r, applied := a.(state.TableRouteApplied); applied {
			ok[pk{r.Prefix, r.Gen}] = true
		}
	}
	if e.applied == nil {
		e.applied = map[netip.Prefix]applied{}
	}
	for _, eff := range effs {
		switch eff := eff.(type) {
		case effects.ReplaceRoute:
			if ok[pk{eff.Route.Prefix, eff.Gen}] {
				e.applied[eff.Route.Prefix] = applied{route: eff.Route, gen: eff.Gen}
			}
		case effects.RemoveRoute:
			if ok[pk{eff.Prefix, eff.Gen}] {
				delete(e.applied, eff.Prefix)
			}
		}
	}
}
