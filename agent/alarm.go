package agent

import (
	"sync"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// alarm is the executor of effects.Alarm: one timer, set to the State's
// earliest deadline, that dispatches state.Tick when it rings
// (docs/design.md "Time"). The loop sets it on its own goroutine as soon
// as a step's Diff asks, so that no effects batch delays it.
type alarm struct {
	dispatch func(state.Action)
	now      func() time.Time
	// afterFunc is time.AfterFunc; tests give their own.
	afterFunc func(time.Duration, func()) stopper

	mu      sync.Mutex
	timer   stopper
	at      time.Time // what timer rings for; zero: off
	stopped bool
}

type stopper interface{ Stop() bool }

func newAlarm(dispatch func(state.Action), now func() time.Time) *alarm {
	return &alarm{dispatch: dispatch, now: now,
		afterFunc: func(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }}
}

// set replaces the alarm with one at at (zero: none). An at already past
// rings at once.
func (a *alarm) set(at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	a.at = at
	if at.IsZero() || a.stopped {
		return
	}
	a.timer = a.afterFunc(max(at.Sub(a.now()), 0), func() { a.ring(at) })
}

// ring dispatches the Tick of the alarm at at, unless it was replaced or
// stopped meanwhile. The Tick says it is at least at: a wall clock set
// back must not leave the deadline unmet and the alarm unset.
func (a *alarm) ring(at time.Time) {
	a.mu.Lock()
	if a.stopped || !a.at.Equal(at) {
		a.mu.Unlock()
		return
	}
	a.timer, a.at = nil, time.Time{}
	a.mu.Unlock()
	now := a.now().Round(0)
	if now.Before(at) {
		now = at
	}
	a.dispatch(state.Tick{At: now})
}

// stop turns the alarm off for good.
func (a *alarm) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopped = true
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
}

// takeAlarm splits the Alarm off effs: Diff emits at most one, last.
func takeAlarm(effs []effects.Effect) (rest []effects.Effect, at time.Time, ok bool) {
	if n := len(effs); n > 0 {
		if x, is := effs[n-1].(effects.Alarm); is {
			return effs[:n-1], x.At, true
		}
	}
	return effs, time.Time{}, false
}
