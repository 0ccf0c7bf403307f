package gobgp

import (
	"net/netip"
	"strings"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/peeragent/peeragent/state"
)

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
		stale, gr := e.gr.ended(addr)
		if stale {
			go e.recreateStale(addr) // docs/routes.md §9.5 rule 3
		}
		a.Reason = e.reasons.take(addr) // a reset this node made
		if ev.Peer.State.AdminState == api.PeerState_ADMIN_STATE_PFX_CT {
			// GoBGP says only "graceful-restart" or "notification-sent".
			a.Reason = state.PrefixLimitReason
		}
		if a.Reason == "" { // neither: the speaker's cause, graceful or not
			a.Reason = ev.Peer.State.DisconnectMessage
			if !stale && ev.Peer.State.DisconnectReason == api.PeerState_DISCONNECT_REASON_GRACEFUL_RESTART && gr.restart > 0 {
				a.Graceful = &state.GracefulLoss{Families: gr.families, RestartSeconds: gr.restart, LongLived: gr.longLived} // §9.5 rule 2
			}
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
