package main

import (
	"context"
	"testing"
	"time"

	"github.com/peeragent/peeragent/state"
)

// TestSettleClockTicksUntilSettled: a Tick at once and at each tick while
// the routes are not settled, none once settled, again after a new speaker.
func TestSettleClockTicksUntilSettled(t *testing.T) {
	at := time.Unix(1000, 0)
	c := &settleClock{now: func() time.Time { return at }}
	got := make(chan state.Action, 10)
	start := func() (chan<- time.Time, func()) {
		ticks := make(chan time.Time)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { c.run(ctx, ticks, func(a state.Action) { got <- a }); close(done) }()
		return ticks, func() { cancel(); <-done }
	}
	want := func(n int) {
		t.Helper()
		for range n {
			if a := <-got; a != state.Action(state.Tick{At: at}) {
				t.Errorf("dispatched %+v, want a Tick at %v", a, at)
			}
		}
	}
	ticks, stop := start()
	want(1)
	ticks <- at
	want(1)
	c.observe(state.State{Routing: state.Routing{Settled: true}})
	ticks <- at
	ticks <- at // returns once the first was handled
	stop()      // returns once the second was
	if len(got) != 0 {
		t.Errorf("%d ticks while settled", len(got))
	}
	c.observe(state.State{}) // a new speaker: not settled
	ticks, stop = start()
	ticks <- at
	stop()
	want(2)
}
