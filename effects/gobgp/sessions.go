package gobgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/peeragent/peeragent/state"
)

// WatchSessions reports every session state change of every neighbor as a
// state.SessionStateChanged until ctx ends, then returns nil. It first
// reports the current state of each configured neighbor. It follows the
// speaker across restarts: each (re)started server is watched from its
// start, and when a server stops, every session it had that was not idle
// is reported idle with the reason "speaker stopped", so that no event of
// a stopped server arrives after those of its successor. dispatch is
// called from one goroutine at a time, in GoBGP's order, and never after
// WatchSessions has returned.
func (e *Executor) WatchSessions(ctx context.Context, dispatch func(state.Action)) error {
	sub := &subscriber{dispatch: dispatch, last: map[netip.Addr]string{}}
	if err := e.sessions.add(sub); err != nil {
		return fmt.Errorf("watch sessions: %w", err)
	}
	<-ctx.Done()
	e.sessions.remove(sub)
	return nil
}

// sessionHub keeps the session watchers on the current server.
type sessionHub struct {
	e      *Executor
	mu     sync.Mutex
	subs   map[*subscriber]bool
	cur    *server.BgpServer // nil while stopped
	cancel context.CancelFunc
	epoch  uint64 // bumped at each attach and detach
}

// subscriber is one WatchSessions call.
type subscriber struct {
	dispatch func(state.Action)
	mu       sync.Mutex // held while dispatching
	last     map[netip.Addr]string
	epoch    uint64 // events of other epochs are stale
	done     bool
}

func (h *sessionHub) add(sub *subscriber) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[*subscriber]bool{}
	}
	h.subs[sub] = true
	sub.epoch = h.epoch
	if h.cur == nil {
		return nil
	}
	ctx, _ := h.context()
	return h.watch(ctx, h.cur, sub)
}

func (h *sessionHub) remove(sub *subscriber) {
	h.mu.Lock()
	delete(h.subs, sub)
	h.mu.Unlock()
	sub.mu.Lock()
	sub.done = true
	sub.mu.Unlock()
}

// context is the one the current server's watches run under.
func (h *sessionHub) context() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	prev := h.cancel
	h.cancel = func() {
		if prev != nil {
			prev()
		}
		cancel()
	}
	return ctx, cancel
}

// attach starts watching a server that has just started.
func (h *sessionHub) attach(bgp *server.BgpServer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.epoch++
	h.cur = bgp
	ctx, _ := h.context()
	for sub := range h.subs {
		sub.mu.Lock()
		sub.epoch = h.epoch
		sub.mu.Unlock()
		if err := h.watch(ctx, bgp, sub); err != nil {
			h.e.log.Error("watch sessions on the new speaker", "error", err)
		}
	}
}

// detach ends the watches on a server that has stopped, reporting every
// session it left that was not idle.
func (h *sessionHub) detach() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cancel != nil {
		h.cancel()
		h.cancel = nil
	}
	h.cur = nil
	h.epoch++
	for sub := range h.subs {
		sub.mu.Lock()
		sub.epoch = h.epoch
		for _, addr := range sortedAddrs(sub.last) {
			if sub.last[addr] == "idle" || sub.done {
				continue
			}
			h.e.reasons.forget(addr)
			sub.dispatch(state.SessionStateChanged{Address: addr, State: "idle", Reason: "speaker stopped", At: h.e.now()})
		}
		clear(sub.last)
		sub.mu.Unlock()
	}
}

func (h *sessionHub) watch(ctx context.Context, bgp *server.BgpServer, sub *subscriber) error {
	epoch := sub.epoch
	return bgp.WatchEvent(ctx, server.WatchEventMessageCallbacks{
		OnPeerUpdate: func(ev *apiutil.WatchEventMessage_PeerEvent, _ time.Time) {
			sub.mu.Lock()
			defer sub.mu.Unlock()
			if sub.done || sub.epoch != epoch {
				return
			}
			if a, ok := h.e.sessionAction(ev, sub.last); ok {
				sub.last[a.Address] = a.State
				sub.dispatch(a)
			}
		},
	}, server.WatchPeer())
}

// sessionAction turns one GoBGP peer event into an Action; last holds the
// state reported before for each address. A down reason goes with the
// first report after established only: that is the drop it explains. The
// executor's own reason ("reconfigured: password") wins over GoBGP's
// (v4's peer events carry the FSM's reason); a deleted peer's event is a
// change to idle with no reason, which is "peer deconfigured".
func (e *Executor) sessionAction(ev *apiutil.WatchEventMessage_PeerEvent, last map[netip.Addr]string) (state.SessionStateChanged, bool) {
	if ev == nil || ev.Type == apiutil.PEER_EVENT_END_OF_INIT {
		return state.SessionStateChanged{}, false
	}
	addr := ev.Peer.State.NeighborAddress
	if !addr.IsValid() {
		addr = ev.Peer.Conf.NeighborAddress
	}
	name := sessionStateName(ev.Peer.State.SessionState)
	if !addr.IsValid() || name == "" {
		return state.SessionStateChanged{}, false
	}
	addr = addr.Unmap()
	a := state.SessionStateChanged{Address: addr, State: name, At: e.now()}
	switch {
	case name == "established":
		e.reasons.forget(addr)
		e.gr.established(addr, ev.Peer.State.RemoteCap)
	case last[addr] == "established":
		if e.gr.ended(addr) {
			go e.recreate(addr) // docs/routes.md §9.5 rule 3
		}
		a.Reason = e.reasons.take(addr)
		if ev.Peer.State.AdminState == api.PeerState_ADMIN_STATE_PFX_CT {
			// GoBGP says only "graceful-restart" or "notification-sent".
			a.Reason = state.PrefixLimitReason
		}
		if a.Reason == "" {
			a.Reason = ev.Peer.State.DisconnectMessage
		}
		if a.Reason == "" {
			a.Reason = "peer deconfigured"
		}
	}
	return a, true
}

// sessionStateName is the lower-case RFC 4271 name of a session state
// ("idle", "connect", "active", "opensent", "openconfirm", "established"),
// or "" for an unknown one.
func sessionStateName(s bgp.FSMState) string {
	switch s {
	case bgp.BGP_FSM_IDLE:
		return "idle"
	case bgp.BGP_FSM_CONNECT:
		return "connect"
	case bgp.BGP_FSM_ACTIVE:
		return "active"
	case bgp.BGP_FSM_OPENSENT:
		return "opensent"
	case bgp.BGP_FSM_OPENCONFIRM:
		return "openconfirm"
	case bgp.BGP_FSM_ESTABLISHED:
		return "established"
	}
	return ""
}

// apiSessionStateName is sessionStateName for the gRPC form ListPeer uses.
func apiSessionStateName(s api.PeerState_SessionState) string {
	if s == api.PeerState_SESSION_STATE_UNSPECIFIED {
		return ""
	}
	name, ok := api.PeerState_SessionState_name[int32(s)]
	if !ok {
		return ""
	}
	return strings.ToLower(strings.TrimPrefix(name, "SESSION_STATE_"))
}

// sortedAddrs lists m's addresses in order, so that reports are stable.
func sortedAddrs(m map[netip.Addr]string) []netip.Addr {
	out := make([]netip.Addr, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out
}
