package state

import "time"

// Deadline is the earliest time at which the State has something to do
// (docs/design.md "Time"): the settle deadline (Routing.SettleAt) or the
// next rescan (Routing.RescanAt). Zero:
// nothing is waiting for time. effects.Diff emits an Alarm whenever it
// changes; the alarm executor dispatches a Tick when it comes.
func (s State) Deadline() time.Time {
	return earliest(s.Routing.SettleAt, s.Routing.RescanAt)
}

// earliest is the earlier of two deadlines, a zero one being none.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}
