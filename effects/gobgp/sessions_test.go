package gobgp

import (
	"net/netip"
	"reflect"
	"testing"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/peeragent/peeragent/state"
)

// TestSessionActionGracefulLoss: the report of an Established session's
// end says it was lost gracefully, with what its OPEN negotiated, only for
// GoBGP's graceful-restart cause: never for a reset this node made, a
// prefix limit, another cause, or a session that ran on an earlier one's
// graceful-restart state (docs/routes.md §9.5 rules 2 and 3).
func TestSessionActionGracefulLoss(t *testing.T) {
	a := netip.MustParseAddr("10.0.0.2")
	v4 := bgp.NewCapGracefulRestartTuple(bgp.RF_IPv4_UC, false)
	grCaps := []bgp.ParameterCapabilityInterface{bgp.NewCapGracefulRestart(false, true, 90, []*bgp.CapGracefulRestartTuple{v4})}
	ev := func(s bgp.FSMState, caps []bgp.ParameterCapabilityInterface, why api.PeerState_DisconnectReason, admin api.PeerState_AdminState) *apiutil.WatchEventMessage_PeerEvent {
		return &apiutil.WatchEventMessage_PeerEvent{Type: apiutil.PEER_EVENT_STATE, Peer: apiutil.Peer{State: apiutil.PeerState{
			NeighborAddress: a, SessionState: s, RemoteCap: caps, DisconnectReason: why, AdminState: admin, DisconnectMessage: "msg"}}}
	}
	graceful := api.PeerState_DISCONNECT_REASON_GRACEFUL_RESTART
	cases := []struct {
		name  string
		first []bgp.ParameterCapabilityInterface // an earlier session's OPEN (nil: none)
		caps  []bgp.ParameterCapabilityInterface
		own   bool
		why   api.PeerState_DisconnectReason
		admin api.PeerState_AdminState
		want  *state.GracefulLoss
	}{
		{name: "graceful", caps: grCaps, why: graceful, want: &state.GracefulLoss{Families: []string{"ipv4-unicast"}, RestartSeconds: 90}},
		{name: "hard-reset", caps: grCaps, why: api.PeerState_DISCONNECT_REASON_HARD_RESET},
		{name: "own-reset", caps: grCaps, why: graceful, own: true},
		{name: "prefix-limit", caps: grCaps, why: graceful, admin: api.PeerState_ADMIN_STATE_PFX_CT},
		{name: "no-capability", why: graceful},
		{name: "earlier-session-state", first: grCaps, why: graceful},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := New(Options{})
			last := map[netip.Addr]string{}
			step := func(x *apiutil.WatchEventMessage_PeerEvent) state.SessionStateChanged {
				act, ok := e.sessionAction(x, last)
				if !ok {
					t.Fatalf("no action for %v", x.Peer.State.SessionState)
				}
				last[a] = act.State
				return act
			}
			if c.first != nil {
				step(ev(bgp.BGP_FSM_ESTABLISHED, c.first, 0, 0))
				step(ev(bgp.BGP_FSM_IDLE, nil, api.PeerState_DISCONNECT_REASON_HARD_RESET, 0))
			}
			step(ev(bgp.BGP_FSM_ESTABLISHED, c.caps, 0, 0))
			if c.own {
				e.reasons.expect(a, "reconfigured: password")
			}
			got := step(ev(bgp.BGP_FSM_IDLE, nil, c.why, c.admin))
			if !reflect.DeepEqual(got.Graceful, c.want) {
				t.Errorf("graceful %+v, want %+v (reason %q)", got.Graceful, c.want, got.Reason)
			}
			if again := step(ev(bgp.BGP_FSM_ACTIVE, nil, c.why, c.admin)); again.Graceful != nil {
				t.Errorf("the next report says graceful again: %+v", again.Graceful)
			}
		})
	}
}
