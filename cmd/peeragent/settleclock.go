package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/peeragent/peeragent/state"
)

// tickEvery is how often the settling clock ticks.
const tickEvery = 5 * time.Second

// settleClock brings time to the reducer as state.Tick Actions while the
// route table is not settled (docs/routes.md §9.6 rule 3): the reducer
// reads no clock. Once settled it is quiet, so that ticks do not fill the
// journal; a new speaker unsettles the table and the ticks resume.
type settleClock struct {
	settled atomic.Bool
	now     func() time.Time
}

// observe follows the published State.
func (c *settleClock) observe(s state.State) { c.settled.Store(s.Routing.Settled) }

// run dispatches a Tick now and at each tick of ticks while not settled,
// until ctx ends.
func (c *settleClock) run(ctx context.Context, ticks <-chan time.Time, dispatch func(state.Action)) {
	now := c.now
	if now == nil {
		now = time.Now
	}
	dispatch(state.Tick{At: now()})
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			if !c.settled.Load() {
				dispatch(state.Tick{At: now()})
			}
		}
	}
}

// rescanEvery dispatches a RescanDue every d until ctx ends: the reducer
// asks the dataplane for its routes again when the table is settled and no
// rescan is outstanding (docs/routes.md §9.7 rule 6).
func rescanEvery(ctx context.Context, d time.Duration, dispatch func(state.Action)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case at := <-t.C:
			dispatch(state.RescanDue{At: at})
		}
	}
}
