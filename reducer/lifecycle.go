package reducer

import (
	"context"
	"sync"
	"time"

	"github.com/looplab/fsm"

	"github.com/peeragent/peeragent/state"
)

// Lifecycle events. The reducer fires them; the table decides the phase.
const (
	evHold      = "hold"      // a required secret is missing: hold the neighbor back
	evConfigure = "configure" // AddPeer issued
	evUpdate    = "update"    // UpdatePeer (or policy) issued
	evApplied   = "applied"   // the speaker confirmed the current generation
	evFail      = "fail"      // the speaker refused the current generation
	evUp        = "up"        // the BGP session reached Established
	evDown      = "down"      // the BGP session left Established (a flap)
	evDelete    = "delete"    // DeletePeer issued
)

const (
	pNew, pWaiting, pConfiguring = state.PhaseNew, state.PhaseWaiting, state.PhaseConfiguring
	pConfigured, pEstablished    = state.PhaseConfigured, state.PhaseEstablished
	pUpdating, pDeleting, pFail  = state.PhaseUpdating, state.PhaseDeleting, state.PhaseFailed
)

// Lifecycle is the session lifecycle table of docs/semantics.md §6.
var Lifecycle = fsm.Events{
	on(evHold, pWaiting, pNew, pConfiguring, pUpdating, pFail, pDeleting),
	on(evConfigure, pConfiguring, pNew, pWaiting, pFail, pDeleting, pConfiguring, pConfigured, pEstablished, pUpdating),
	on(evUpdate, pUpdating, pConfigured, pEstablished, pUpdating, pConfiguring, pFail),
	on(evApplied, pConfigured, pConfiguring, pUpdating, pFail),
	on(evFail, pFail, pConfiguring, pUpdating, pDeleting, pFail, pWaiting, pConfigured, pEstablished),
	on(evUp, pEstablished, pConfigured),
	on(evDown, pConfigured, pEstablished),
	on(evDelete, pDeleting, pWaiting, pConfiguring, pConfigured, pEstablished, pUpdating, pFail),
}

// on is one row of the table: ev moves a session in any phase of from to
// phase to. looplab/fsm speaks strings; the State speaks state.Phase.
func on(ev string, to state.Phase, from ...state.Phase) fsm.EventDesc {
	src := make([]string, len(from))
	for i, p := range from {
		src[i] = string(p)
	}
	return fsm.EventDesc{Name: ev, Src: src, Dst: string(to)}
}

// machines recycles looplab FSMs: an FSM is mutable, a phase is data, so
// each step borrows one, sets it to the session's phase and fires.
var machines = sync.Pool{New: func() any { return fsm.NewFSM(string(pNew), Lifecycle, nil) }}

// fire returns the phase after ev, and false when the table has no such
// transition from phase (the event is then ignored).
func fire(phase state.Phase, ev string) (state.Phase, bool) {
	m := machines.Get().(*fsm.FSM)
	defer machines.Put(m)
	m.SetState(string(phase))
	err := m.Event(context.Background(), ev)
	switch err.(type) {
	case nil:
		return state.Phase(m.Current()), true
	case fsm.NoTransitionError:
		return phase, true
	}
	return phase, false
}

// Mermaid renders the lifecycle table as a mermaid state diagram.
func Mermaid() (string, error) {
	return fsm.VisualizeWithType(fsm.NewFSM(string(pNew), Lifecycle, nil), fsm.MERMAID)
}

func (t *tx) session(k string, a *state.Neighbor) *state.Session {
	if s, ok := t.s.Out.Sessions.Get(k); ok {
		c := *s
		return &c
	}
	return &state.Session{Address: a.Address, Phase: pNew}
}

// step moves a neighbor's session after its desired config changed, and
// gives it a new generation.
func (t *tx) step(k string, old, n *state.Neighbor) {
	addr := n
	if addr == nil {
		addr = old
	}
	s := t.session(k, addr)
	ev, op := evUpdate, state.OpUpdate
	switch {
	case n == nil && t.wasSynced && (old.Active() || s.Phase != pWaiting):
		ev, op = evDelete, state.OpDelete
	case n == nil: // nothing to undo: never configured, or gone before the first sync
		t.s.Out.Sessions = t.s.Out.Sessions.Delete(k)
		return
	case !n.Active():
		ev, op = evHold, ""
		if old.Active() && t.wasSynced {
			op = state.OpDelete // Diff takes the unconfirmed neighbor out of the speaker
		}
	case !old.Active() || t.restart:
		ev, op = evConfigure, state.OpAdd
	}
	t.s.Seq++
	s.Gen, s.Op, s.Retry, s.RetryAt = t.s.Seq, op, 0, time.Time{}
	if s.MD5FailuresSeen { // a new config (a new password) starts afresh
		s.MD5FailuresSeen = false
		t.setProblems("md5/"+k, nil)
	}
	t.move(s, ev)
	t.s.Out.Sessions = t.s.Out.Sessions.Set(k, s)
}

// move fires ev on the session; leaving failed drops its retry.
func (t *tx) move(s *state.Session, ev string) {
	if next, ok := fire(s.Phase, ev); ok && next != s.Phase {
		if s.Phase == pFail {
			s.RetryAt = time.Time{}
		}
		s.Phase = next
		if !t.at.IsZero() {
			s.Since = t.at
		}
	}
}

// setServer records the speaker's global config. A change after it was
// first known restarts the speaker, which drops every session: each
// active neighbor is configured again under a new generation.
func (t *tx) setServer(srv state.Server) {
	if srv == t.s.Server {
		return
	}
	if t.s.Server != (state.Server{}) {
		t.restart = true
	}
	t.s.Server = srv
	t.newSpeaker()
}
