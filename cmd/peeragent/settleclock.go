package main

import (
	"context"
	"time"

	"github.com/peeragent/peeragent/state"
)

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
