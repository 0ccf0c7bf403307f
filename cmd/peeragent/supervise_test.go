package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// untilDone is a part that runs until ctx ends, counting its starts.
func untilDone(starts *atomic.Int32) func(context.Context) error {
	return func(ctx context.Context) error { starts.Add(1); <-ctx.Done(); return nil }
}

func TestSupervise(t *testing.T) {
	defer func(b func(int) time.Duration) { restartBackoff = b }(restartBackoff)
	restartBackoff = func(int) time.Duration { return time.Millisecond }
	boom := errors.New("boom")
	t.Run("a-failure-stops-every-part-with-its-name", func(t *testing.T) {
		var other atomic.Int32
		err := supervise(context.Background(), discardLog(), []part{
			{name: "loop", run: untilDone(&other), forever: true},
			{name: "source dir x", run: func(context.Context) error { return boom }, forever: true},
		})
		if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "source dir x: ") || other.Load() != 1 {
			t.Errorf("supervise = %v (the loop started %d times), want the source's failure, the loop stopped", err, other.Load())
		}
	})
	t.Run("a-restartable-part-is-restarted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var runs atomic.Int32
		done := make(chan error, 1)
		go func() {
			done <- supervise(ctx, discardLog(), []part{{name: "session watch", restart: true, forever: true,
				run: func(ctx context.Context) error {
					if runs.Add(1) < 3 {
						return boom
					}
					<-ctx.Done()
					return nil
				}}})
		}()
		deadline := time.Now().Add(5 * time.Second)
		for runs.Load() < 3 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil || runs.Load() != 3 {
			t.Errorf("supervise = %v after %d runs, want nil after 3", err, runs.Load())
		}
	})
	t.Run("ending-early-is-a-failure-unless-done-is-allowed", func(t *testing.T) {
		err := supervise(context.Background(), discardLog(), []part{
			{name: "vpp link", run: func(context.Context) error { return nil }},
			{name: "loop", run: func(context.Context) error { return nil }, forever: true},
		})
		if err == nil || err.Error() != "loop: ended before the agent stopped" {
			t.Errorf("supervise = %v", err)
		}
	})
	t.Run("a-panic-stops-the-agent", func(t *testing.T) {
		err := supervise(context.Background(), discardLog(), []part{{name: "kernel facts", forever: true,
			run: func(context.Context) error { panic("nil map") }}})
		if err == nil || err.Error() != "kernel facts: panic: nil map" {
			t.Errorf("supervise = %v", err)
		}
	})
	t.Run("ctx-end-is-no-failure", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var starts atomic.Int32
		go func() {
			for starts.Load() < 2 {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		err := supervise(ctx, discardLog(), []part{{name: "a", run: untilDone(&starts), forever: true},
			{name: "b", run: untilDone(&starts), forever: true, restart: true}})
		if err != nil {
			t.Errorf("supervise = %v, want nil", err)
		}
	})
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
