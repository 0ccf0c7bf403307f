package gobgp

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	api "github.com/osrg/gobgp/v3/api"

	"github.com/peeragent/peeragent/state"
)

// WatchSessions reports every session state change of every neighbor as a
// state.SessionStateChanged until ctx ends, then returns nil. It first
// reports the current state of each configured neighbor. dispatch is
// called from one goroutine at a time, in GoBGP's order, and never after
// WatchSessions has returned.
func (e *Executor) WatchSessions(ctx context.Context, dispatch func(state.Action)) error {
	var mu sync.Mutex
	done, last := false, map[netip.Addr]string{}
	err := e.bgp.WatchEvent(ctx, &api.WatchEventRequest{Peer: &api.WatchEventRequest_Peer{}}, func(r *api.WatchEventResponse) {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return
		}
		if a, ok := e.sessionAction(r.GetPeer(), last); ok {
			last[a.Address] = a.State
			dispatch(a)
		}
	})
	if err != nil {
		return fmt.Errorf("watch sessions: %w", err)
	}
	<-ctx.Done()
	mu.Lock()
	done = true
	mu.Unlock()
	return nil
}

// sessionAction turns one GoBGP peer event into an Action; last holds the
// state reported before for each address. A down reason goes with the
// first report after established only: that is the drop it explains.
// A deleted peer that was established shows up as type UNKNOWN with state
// idle (and nothing at all if it was not established); see deconfigured.
func (e *Executor) sessionAction(ev *api.WatchEventResponse_PeerEvent, last map[netip.Addr]string) (state.SessionStateChanged, bool) {
	if ev == nil || ev.Type == api.WatchEventResponse_PeerEvent_END_OF_INIT {
		return state.SessionStateChanged{}, false
	}
	addr, err := netip.ParseAddr(ev.GetPeer().GetState().GetNeighborAddress())
	if err != nil {
		addr, err = netip.ParseAddr(ev.GetPeer().GetConf().GetNeighborAddress())
	}
	name := sessionStateName(ev.GetPeer().GetState().GetSessionState())
	if err != nil || name == "" {
		return state.SessionStateChanged{}, false
	}
	addr = addr.Unmap()
	a := state.SessionStateChanged{Address: addr, State: name, At: e.now()}
	switch {
	case ev.Type == api.WatchEventResponse_PeerEvent_UNKNOWN:
		return e.deconfigured(a)
	case name == "established":
		e.glog.reasons.forget(addr)
	case last[addr] == "established":
		a.Reason = e.glog.reasons.take(addr)
	}
	return a, true
}

// deconfigured reports the end of a deleted peer's session, unless the
// address is configured again: GoBGP emits this event only once the old
// session's goroutines have stopped, which can be after the new peer at
// the same address (re-created by an UpdatePeer, or re-added) has
// reported its own states; those are the current ones.
func (e *Executor) deconfigured(a state.SessionStateChanged) (state.SessionStateChanged, bool) {
	if _, ok, err := e.currentPeer(context.Background(), a.Address); err == nil && ok {
		return a, false
	}
	a.Reason = e.glog.reasons.take(a.Address)
	if a.Reason == "" || a.Reason == "dying" {
		a.Reason = "peer deconfigured" // GoBGP's "dying" says no more
	}
	return a, true
}

// sessionStateName is the lower-case RFC 4271 name of a session state
// ("idle", "connect", "active", "opensent", "openconfirm", "established"),
// or "" for GoBGP's UNKNOWN.
func sessionStateName(s api.PeerState_SessionState) string {
	if s == api.PeerState_UNKNOWN {
		return ""
	}
	name, ok := api.PeerState_SessionState_name[int32(s)]
	if !ok {
		return ""
	}
	return strings.ToLower(name)
}
