package main

import (
	"context"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/state"
)

func TestGCStartOver(t *testing.T) {
	t0 := time.Unix(1000, 0)
	now := t0
	g := &gcStart{now: func() time.Time { return now }}
	g.observe(state.State{}) // a State published at t0
	cases := []struct {
		name  string
		ready bool
		at    time.Duration // after t0
		want  bool
	}{
		{"not ready, quiet", false, startQuiet, false},
		{"ready, changed just now", true, 0, false},
		{"ready, quiet not long enough", true, startQuiet - time.Millisecond, false},
		{"ready and quiet", true, startQuiet, true},
		{"not ready past the bound", false, startMax, true},
	}
	for _, c := range cases {
		if got := g.over(c.ready, t0, t0.Add(c.at)); got != c.want {
			t.Errorf("%s: over = %v, want %v", c.name, got, c.want)
		}
	}
	// A State published later starts the quiet time again.
	now = t0.Add(time.Second)
	g.observe(state.State{})
	if g.over(true, t0, t0.Add(startQuiet)) {
		t.Error("over although the State changed 1 s after t0")
	}
	if !g.over(true, t0, t0.Add(time.Second+startQuiet)) {
		t.Error("not over 3 s after the last change")
	}
}

func TestGCStartPercent(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)

	if g := newGCStart(0, log); g != nil {
		t.Error("--gc-start-percent 0 made a start phase")
	}
	t.Setenv("GOGC", "50")
	if g := newGCStart(400, log); g != nil {
		t.Error("a start phase although $GOGC is set")
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC changed to %d although $GOGC is set", got)
	}
}

func TestGCStartRun(t *testing.T) {
	if _, ok := lookupGOGC(); ok {
		t.Skip("$GOGC is set")
	}
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	prev := debug.SetGCPercent(80)
	defer debug.SetGCPercent(prev)
	g := newGCStart(400, log)
	if g == nil {
		t.Fatal("no start phase")
	}
	if got := debug.SetGCPercent(400); got != 400 {
		t.Fatalf("GOGC while starting = %d, want 400", got)
	}
	base := time.Now()
	g.now = func() time.Time { return base.Add(time.Since(base) * 100) } // the quiet time passes 100x faster
	done := make(chan error, 1)
	go func() { done <- g.run(context.Background(), func() bool { return true }) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the start phase did not end")
	}
	if got := debug.SetGCPercent(80); got != 80 {
		t.Errorf("GOGC after the start = %d, want the one before it (80)", got)
	}
	if !strings.Contains(logs.String(), "start over") {
		t.Errorf("no log line for the end of the start: %q", logs.String())
	}
}

func TestCheckGCStartPercent(t *testing.T) {
	for p, ok := range map[int]bool{-1: false, 0: true, 100: true, 400: true} {
		if err := checkGCStartPercent(p); (err == nil) != ok {
			t.Errorf("checkGCStartPercent(%d) = %v", p, err)
		}
	}
}
