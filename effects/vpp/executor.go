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
// usable; build it with Dial (the agent's: a link it keeps across VPP
// restarts) or Attach (over a connection the caller owns). Safe for
// concurrent use.
type Executor struct {
	conn api.Connection // the caller's connection (Attach); nil with a link
	log  *slog.Logger
	// source is our FIB source's id (0: none registered, table routes
	// fail); set by Attach, and at each connection of the link's Run.
	source atomic.Uint32

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
	_ effects.Runner   = (*Executor)(nil) // Run: the link of a Dial-made executor (Attach's: returns at once)
)

// newExecutor is an Executor over conn (nil: the link's, set by Dial).
func newExecutor(conn api.Connection, logger *slog.Logger) *Executor {
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
	e := newExecutor(conn, logger)
	e.source.Store(uint32(src))
	return e, nil
}

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

// Execute applies the route table effects of effs (docs/routes.md §9.7)
// and returns one TableRouteApplied or TableRouteApplyFailed per (prefix,
// generation). What VPP accepted is recorded for the replay after a VPP
// restart.
func (e *Executor) Execute(ctx context.Context, effs []effects.Effect) []state.Action {
	e.exec.Lock()
	defer e.exec.Unlock()
	out := effects.ApplyRoutes(ctx, e, effs)
	e.record(effs, out)
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
