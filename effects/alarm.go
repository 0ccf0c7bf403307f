package effects

import (
	"net/netip"
	"time"

	"github.com/peeragent/peeragent/state"
)

// Alarm sets the agent's one alarm to At, the State's earliest deadline
// (state.State.Deadline: a retry, the settle deadline, the next rescan);
// a zero At turns it off. When it rings the alarm executor dispatches
// state.Tick with the time (docs/design.md "Time"). Diff emits one
// whenever the earliest deadline changes. Idempotent: setting the alarm
// replaces the one set before.
type Alarm struct {
	At time.Time
}

func (e Alarm) String() string {
	if e.At.IsZero() {
		return "alarm off"
	}
	return "alarm " + e.At.UTC().Format(time.RFC3339Nano)
}

func (Alarm) Address() netip.Addr { return netip.Addr{} }
func (Alarm) Ref() Ref            { return Ref{Kind: KindAlarm} }

// alarmEffect is the Alarm of a step: one when the earliest deadline
// changed, none otherwise.
func alarmEffect(prev, next state.State) []Effect {
	if at := next.Deadline(); !at.Equal(prev.Deadline()) {
		return []Effect{Alarm{At: at}}
	}
	return nil
}
