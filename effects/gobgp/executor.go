package gobgp

import (
	"context"
	"errors"
	"fmt"
	api "github.com/osrg/gobgp/v4/api"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// Options configure an Executor.
type Options struct {
	// ListenAddresses are the addresses the speaker accepts sessions on;
	// empty means GoBGP's default, every address ("0.0.0.0" and "::").
	ListenAddresses []string
	// Logger receives the executor's and GoBGP's logs (slog.Default() if nil).
	Logger *slog.Logger
	// GoBGPLevel is the lowest level of GoBGP's own messages that are
	// passed on (GoBGP is chatty at Info); the zero value is Info, so set
	// slog.LevelWarn to keep only its warnings and errors. SetGoBGPLevel
	// changes it while running.
	GoBGPLevel slog.Level
	// GracefulShutdown makes Close stop the speaker without a NOTIFICATION
	// to the neighbors that negotiated graceful restart, so that they keep
	// this node's routes while it restarts (RFC 4724); false tells every
	// neighbor the session is over.
	GracefulShutdown bool
	// Now is the clock for result and session timestamps (time.Now if nil).
	Now func() time.Time
	// GRPCAddress, when set, serves GoBGP's own gRPC API (what the gobgp
	// CLI of the same release speaks) on it while the speaker runs; see
	// grpcapi.go. Empty: no API.
	GRPCAddress string
	// Report receives what the executor finds outside Execute: a
	// ServerApplyFailed when the speaker's listener stops accepting
	// connections, after the executor stopped that speaker so that the
	// server retry starts a new one (listener.go). Nil: it is only logged.
	Report func(state.Action)
	// Families are the address families of the speaker's RIB (GoBGP's
	// global AfiSafis), GoBGP's names ("ipv4-unicast"): every family a
	// neighbor may be given must be one of them, since GoBGP drops the
	// paths of a family its RIB lacks (AddPeer refuses such a neighbor).
	// Empty: every family GoBGP knows, 26 tables in each of its two RIBs,
	// 2,048 shards each, ~12 MB of heap and a third of a lone agent's CPU
	// at start (docs/performance.md "What the binary maps").
	Families []string
}

// Executor carries out speaker effects on an embedded GoBGP server. It is
// safe for concurrent use; Execute calls run one at a time.
type Executor struct {
	log      *slog.Logger
	ghandler slog.Handler // the agent's, under "component=gobgp"
	level    *slog.LevelVar
	secrets  *redactor
	refused  *keyRefusals
	reasons  *reasonBook
	watches  watchHub // Watch, WatchSessions, WatchLearned (watch.go)
	listen   []string
	now      func() time.Time
	graceful bool
	grpc     string   // Options.GRPCAddress
	families []string // Options.Families

	report func(state.Action)

	mu       sync.Mutex        // guards what follows; held for a whole Execute
	bgp      *server.BgpServer // the running speaker, nil while stopped
	epoch    uint64            // bumped at each start, names the running speaker
	running  *state.Server
	policies map[netip.Addr]installed
	members  map[netip.Addr]bool      // members of customNeighbors (see policyops.go)
	comm     commBook                 // the community statements (communities.go)
	peers    map[netip.Addr]reflector // configured peers (see peerops.go)
	// restarting: the families of a StartServer's Preserved while the
	// Execute that started the server runs (see restart.go).
	restarting []string
	// applied is each configured peer's last config, for recreate.
	applied map[netip.Addr]*api.Peer
	gr      grBook // graceful-restart state GoBGP keeps (grstate.go)
}

var _ effects.Executor = (*Executor)(nil)

// New makes an executor; the speaker itself is created and started by
// StartServer.
func New(opts Options) *Executor {
	e := &Executor{
		log:      opts.Logger,
		level:    new(slog.LevelVar),
		secrets:  newRedactor(),
		refused:  newKeyRefusals(),
		reasons:  newReasonBook(),
		listen:   append([]string(nil), opts.ListenAddresses...),
		now:      opts.Now,
		graceful: opts.GracefulShutdown,
		grpc:     opts.GRPCAddress,
		families: append([]string(nil), opts.Families...),
		policies: map[netip.Addr]installed{},
		members:  map[netip.Addr]bool{},
		comm:     newCommBook(),
		peers:    map[netip.Addr]reflector{},
		applied:  map[netip.Addr]*api.Peer{},
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.now == nil {
		e.now = time.Now
	}
	e.watches.e = e
	e.report = opts.Report
	e.level.Set(opts.GoBGPLevel)
	h := e.log.With("component", "gobgp").Handler()
	e.ghandler = h
	return e
}

// SetGoBGPLevel changes the lowest level of GoBGP's messages passed on.
func (e *Executor) SetGoBGPLevel(l slog.Level) { e.level.Set(l) }

// Close stops the speaker (gracefully when Options.GracefulShutdown says
// so), ending every session and closing its listeners.
func (e *Executor) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopServer(context.Background(), e.graceful)
}

// Execute carries out the speaker's effects in order and reports, for each
// neighbor address and generation, one PeerApplied or PeerApplyFailed, and
// for each server effect one ServerApplied or ServerApplyFailed. A
// neighbor's effects stop at its first error; the other neighbors go on.
// Path, set and reset-out effects run in Diff's order; each add-path and
// delete-path reports one PathApplied or PathApplyFailed (a set or
// reset-out failure is logged). A recreate-peer reports nothing (its
// session events follow). VPP route and secret-watch effects are not the
// speaker's and are ignored.
func (e *Executor) Execute(ctx context.Context, effs []effects.Effect) []state.Action {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer func() { e.restarting = nil }()
	// At most one result per effect; one Execute's own paths share their
	// attributes (the cache is made at the first path).
	out := make([]state.Action, 0, len(effs))
	var attrs attrCache
	bs := batches(effs)
	for i := 0; i < len(bs); i++ {
		b := bs[i]
		switch {
		case b.path != nil:
			if attrs == nil {
				attrs = attrCache{}
			}
			if n := addRun(bs[i:]); n > 1 {
				out = e.runAdds(ctx, bs[i:i+n], attrs, out)
				i += n - 1
			} else if a := e.runPath(ctx, b.path, attrs); a != nil {
				out = append(out, a)
			}
		case b.server != nil:
			out = append(out, e.runServer(ctx, b.server))
		case b.recreate.IsValid():
			e.recreate(b.recreate, "its session was lost gracefully") // no result: docs/routes.md §9.5 rule 2
		default:
			out = append(out, e.runNeighbor(ctx, b))
		}
	}
	return out
}

// batch is one server effect, one path effect, or every effect of one
// neighbor generation.
type batch struct {
	server   effects.Effect
	path     effects.Effect
	recreate netip.Addr // a RecreatePeer's
	addr     netip.Addr
	gen      uint64
	effs     []effects.Effect
}

type batchKey struct {
	addr netip.Addr
	gen  uint64
}

// batches groups the neighbor effects by address and generation, in the
// order each group first appears (Diff already emits them together). The
// batches are values in one slice, so that a run of 10,000 path effects
// is one allocation, not 10,000.
func batches(effs []effects.Effect) []batch {
	out := make([]batch, 0, len(effs))
	var index map[batchKey]int
	for _, eff := range effs {
		switch eff.(type) {
		case effects.StartServer, effects.RestartServer, effects.StopServer:
			out = append(out, batch{server: eff})
			continue
		case effects.AddPath, effects.DeletePath, effects.SetAdd, effects.SetDel, effects.ResetOut:
			out = append(out, batch{path: eff})
			continue
		case effects.RecreatePeer:
			out = append(out, batch{recreate: eff.Address()})
			continue
		case effects.AddPeer, effects.UpdatePeer, effects.DeletePeer, effects.SetPolicy, effects.DeletePolicy:
		default:
			continue
		}
		k := batchKey{eff.Address(), genOf(eff)}
		i, ok := index[k]
		if !ok {
			if index == nil {
				index = map[batchKey]int{}
			}
			i = len(out)
			index[k] = i
			out = append(out, batch{addr: k.addr, gen: k.gen})
		}
		out[i].effs = append(out[i].effs, eff)
	}
	return out
}

func genOf(eff effects.Effect) uint64 {
	switch e := eff.(type) {
	case effects.AddPeer:
		return e.Gen
	case effects.UpdatePeer:
		return e.Gen
	case effects.DeletePeer:
		return e.Gen
	case effects.SetPolicy:
		return e.Gen
	case effects.DeletePolicy:
		return e.Gen
	}
	return 0
}

func (e *Executor) runNeighbor(ctx context.Context, b batch) state.Action {
	for _, eff := range b.effs {
		err := ctx.Err()
		if err == nil {
			e.refused.take(b.addr) // a refusal noted before this call is not this call's
			err = e.apply(ctx, eff)
		}
		if err != nil {
			msg := e.secrets.scrub(describe(eff) + ": " + err.Error())
			e.log.Warn("speaker effect failed", "effect", eff.String(), "error", msg)
			return state.PeerApplyFailed{Address: b.addr, Gen: b.gen, Error: msg, At: e.now()}
		}
		if why, ok := e.refused.take(b.addr); ok {
			return e.keyRefused(ctx, b, eff, why)
		}
	}
	return state.PeerApplied{Address: b.addr, Gen: b.gen, At: e.now()}
}

// keyRefused takes out of the speaker a neighbor whose TCP-MD5 key the
// kernel refused while eff configured it, so that no session comes up
// without the key (docs/semantics.md §4), and reports it as refused. The
// error says which neighbor and what the kernel said, never the key.
func (e *Executor) keyRefused(ctx context.Context, b batch, eff effects.Effect, why string) state.Action {
	msg := describe(eff) + ": the speaker refused its TCP-MD5 key: " + why
	if err := e.deletePeer(ctx, b.addr); err != nil {
		msg += "; taking it out failed too: " + err.Error()
	}
	msg = e.secrets.scrub(msg)
	e.log.Error("speaker refused a TCP-MD5 key; neighbor taken out", "neighbor", b.addr.String(), "error", msg)
	return state.PeerKeyRefused{Address: b.addr, Gen: b.gen, Error: msg, At: e.now()}
}

func (e *Executor) apply(ctx context.Context, eff effects.Effect) error {
	switch x := eff.(type) {
	case effects.SetPolicy:
		return e.setPolicy(ctx, x.Addr, x.Policy)
	case effects.AddPeer:
		return e.addPeer(ctx, x.Neighbor)
	case effects.UpdatePeer:
		if x.Reset {
			e.reasons.expect(x.New.Address, "reconfigured: "+resetFields(x.Changes))
		}
		err := e.updatePeer(ctx, x.New)
		if err != nil && x.Reset {
			e.reasons.forget(x.New.Address) // no reset happened to explain
		}
		return err
	case effects.DeletePeer:
		return e.deletePeer(ctx, x.Addr)
	case effects.DeletePolicy:
		return e.deletePolicy(ctx, x.Addr)
	}
	return fmt.Errorf("not a speaker effect: %s", eff)
}

// resetFields names the changed settings that reset the session.
func resetFields(cs []effects.Change) string {
	var names []string
	for _, c := range cs {
		if c.Reset {
			names = append(names, c.Field)
		}
	}
	return strings.Join(names, ", ")
}

// describe names the operation and the neighbor for an error message; it
// is the one place errors are wrapped.
func describe(eff effects.Effect) string {
	switch x := eff.(type) {
	case effects.AddPeer:
		return fmt.Sprintf("add peer %s (AS %d)", x.Neighbor.Address, x.Neighbor.PeerASN)
	case effects.UpdatePeer:
		return fmt.Sprintf("update peer %s (AS %d)", x.New.Address, x.New.PeerASN)
	case effects.DeletePeer:
		return fmt.Sprintf("delete peer %s", x.Addr)
	case effects.SetPolicy:
		return fmt.Sprintf("set policy %s", x.Addr)
	case effects.DeletePolicy:
		return fmt.Sprintf("delete policy %s", x.Addr)
	}
	return eff.String()
}

func (e *Executor) runServer(ctx context.Context, eff effects.Effect) state.Action {
	var srv state.Server
	var err error
	switch x := eff.(type) {
	case effects.StartServer:
		srv = x.Server
		err = e.startServer(ctx, srv, x.Gen)
		e.restarting = x.Preserved
	case effects.RestartServer:
		srv = x.New
		if err = e.stopServer(ctx, false); err == nil {
			err = e.startServer(ctx, srv, x.Gen)
		}
	case effects.StopServer:
		err = e.stopServer(ctx, false)
	}
	if err != nil {
		msg := e.secrets.scrub(fmt.Sprintf("start server (%s): %v", describeServer(srv), err))
		if _, stop := eff.(effects.StopServer); stop {
			msg = e.secrets.scrub("stop server: " + err.Error())
		}
		e.log.Error("speaker server effect failed", "effect", eff.String(), "error", msg)
		return state.ServerApplyFailed{Server: srv, Error: msg, At: e.now(),
			OtherSpeaker: errors.As(err, new(otherSpeakerErr))}
	}
	return state.ServerApplied{Server: srv, At: e.now()}
}
