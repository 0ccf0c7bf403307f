package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"golang.org/x/sync/errgroup"
)

// part is one long-running part of the agent (docs/design.md "Data
// flow"): the loop, a listener, a watch, a source. run runs it until ctx
// ends.
type part struct {
	name string
	run  func(ctx context.Context) error
	// restart: when run fails it is logged and started again after a
	// backoff; otherwise its failure stops the agent.
	restart bool
	// forever: run returning before the agent stops is a failure (else it
	// is done, e.g. a VPP link that has nothing to follow).
	forever bool
}

// restartBackoff is the delay before restart number n of a part; tests
// shorten it.
var restartBackoff = func(n int) time.Duration { return min(time.Second<<min(n-1, 6), time.Minute) }

// supervise starts every part and returns when they have all returned:
// nil once ctx ends, or the first failure of a part that is not
// restarted, which stops the others (errgroup). A panic in a part is such
// a failure, with its stack logged.
func supervise(ctx context.Context, log *slog.Logger, parts []part) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, p := range parts {
		g.Go(func() error { return p.keep(ctx, log) })
	}
	return g.Wait()
}

// keep runs p, again after each failure while it may be restarted.
func (p part) keep(ctx context.Context, log *slog.Logger) error {
	for n := 1; ; n++ {
		err := p.once(ctx, log)
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil && !p.forever:
			return nil
		case err == nil:
			err = errors.New("ended before the agent stopped")
		}
		if !p.restart {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		d := restartBackoff(n)
		log.Error("part of the agent failed; restarting it", "part", p.name, "error", err, "in", d)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(d):
		}
	}
}

// once runs p one time, a panic becoming its error.
func (p part) once(ctx context.Context, log *slog.Logger) (err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("part of the agent panicked", "part", p.name, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return p.run(ctx)
}
