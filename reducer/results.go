package reducer

import (
	"net/netip"

	"github.com/peeragent/peeragent/state"
)

// reduceResult handles what the executors and the speaker report. Each
// result names the generation it was computed for; a result for another
// generation is stale and dropped, leaving the State as it was.
func reduceResult(s state.State, a state.Action) state.State {
	t := &tx{s: s, dirty: map[string]struct{}{}}
	switch a := a.(type) {
	case state.PeerApplied:
		t.at = a.At
		t.current(a.Address, a.Gen, t.peerApplied)
	case state.PeerApplyFailed:
		t.at = a.At
		t.current(a.Address, a.Gen, func(k string, x *state.Session) {
			x.Attempts++
			x.LastError = a.Error
			t.move(x, evFail)
			t.putSession(k, x)
		})
	case state.RetryDue:
		if !a.Address.IsValid() {
			if _, failed := s.Out.Problems.Get("server"); failed {
				t.s.ServerRetry++
			}
			break
		}
		t.current(a.Address, a.Gen, func(k string, x *state.Session) {
			if x.Phase == pFail || x.Route == state.RouteStateFailed {
				x.Retry++
				t.putSession(k, x)
			}
		})
	case state.RouteApplied:
		t.current(a.Address, a.Gen, func(k string, x *state.Session) {
			x.Route = state.RouteStateApplied
			if a.Skipped {
				x.Route = state.RouteStateSkipped
			}
			if x.Phase != pFail { // the route's failure is over; a peer failure is not
				x.Attempts, x.LastError = 0, ""
			}
			t.putSession(k, x)
		})
	case state.RouteApplyFailed:
		t.current(a.Address, a.Gen, func(k string, x *state.Session) {
			x.Route, x.LastError = state.RouteStateFailed, a.Error
			x.Attempts++
			t.putSession(k, x)
		})
	case state.SessionStateChanged:
		t.at = a.At
		t.sessionState(a)
	case state.ServerApplied:
		if a.Server == s.Server {
			t.setProblems("server", nil)
		}
	case state.ServerApplyFailed:
		if a.Server == s.Server {
			t.setProblems("server", []state.Problem{{Object: "server", Reason: a.Error}})
		}
	}
	return t.s
}

// current calls fn with a copy of the session at addr when gen is its
// current generation; otherwise the result is stale and nothing happens.
func (t *tx) current(addr netip.Addr, gen uint64, fn func(string, *state.Session)) {
	k := state.AddrKey(addr.Unmap())
	cur, ok := t.s.Out.Sessions.Get(k)
	if !ok || cur.Gen != gen {
		return
	}
	x := *cur
	fn(k, &x)
}

func (t *tx) putSession(k string, x *state.Session) {
	t.s.Out.Sessions = t.s.Out.Sessions.Set(k, x)
}

// peerApplied: the speaker now holds the current generation. A confirmed
// deletion ends the session; otherwise the applied config is remembered
// (it is what a missing secret falls back to).
func (t *tx) peerApplied(k string, x *state.Session) {
	n, ok := t.s.Out.Neighbors.Get(k)
	if !ok {
		if x.Phase == pDeleting || x.Phase == pFail {
			t.s.Out.Sessions = t.s.Out.Sessions.Delete(k)
		}
		return
	}
	if !n.Active() {
		// The undo of an unconfirmed add landed: back to waiting.
		if x.Phase == pFail {
			x.Attempts, x.LastError = 0, ""
			t.move(x, evHold)
			t.putSession(k, x)
		}
		return
	}
	x.Applied, x.Attempts, x.LastError = n, 0, ""
	t.move(x, evApplied)
	if x.BGP == "established" {
		t.move(x, evUp)
	}
	t.putSession(k, x)
}

// sessionState follows the speaker's view of a session. Leaving
// Established is a flap, counted with its reason.
func (t *tx) sessionState(a state.SessionStateChanged) {
	k := state.AddrKey(a.Address.Unmap())
	cur, ok := t.s.Out.Sessions.Get(k)
	if !ok || cur.BGP == a.State {
		return
	}
	x := *cur
	if x.BGP == "established" {
		x.Flaps++
		x.LastDownReason = a.Reason
		if x.LastDownReason == "" {
			x.LastDownReason = "went to " + a.State
		}
		t.move(&x, evDown)
	}
	x.BGP = a.State
	if a.State == "established" {
		t.move(&x, evUp)
	}
	if !a.At.IsZero() {
		x.Since = a.At
	}
	t.putSession(k, &x)
}
