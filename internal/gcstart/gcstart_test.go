package gcstart

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestGCStartOver(t *testing.T) {
	t0 := time.Unix(1000, 0)
	now := t0
	g := &Phase{now: func() time.Time { return now }}
	g.Touch() // a State published at t0
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
	g.Touch()
	if g.over(true, t0, t0.Add(startQuiet)) {
		t.Error("over although the State changed 1 s after t0")
	}
	if !g.over(true, t0, t0.Add(time.Second+startQuiet)) {
		t.Error("not over startQuiet after the last change")
	}
}

func TestGCStartPercent(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)

	if g := New(0, log); g != nil {
		t.Error("--gc-start-percent 0 made a start phase")
	}
	t.Setenv("GOGC", "")
	if g := New(400, log); g == nil {
		t.Error("no start phase although $GOGC is empty (Go reads it as unset)")
	} else {
		g.mu.Lock()
		g.ended = true
		g.mu.Unlock()
		if g.limit > 0 {
			debug.SetMemoryLimit(g.prevLim)
		}
	}
	debug.SetGCPercent(100)
	t.Setenv("GOGC", "50")
	if g := New(400, log); g != nil {
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
	g := New(400, log)
	if g == nil {
		t.Fatal("no start phase")
	}
	if got := gogc(g); got < 400 {
		t.Fatalf("GOGC while starting = %d, want at least 400", got)
	}
	base := time.Now()
	g.now = func() time.Time { return base.Add(time.Since(base) * 100) } // the quiet time passes 100x faster
	done := make(chan error, 1)
	go func() { done <- g.Run(context.Background(), func() bool { return true }) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the start phase did not end")
	}
	if got := debug.SetGCPercent(80); got != 80 {
		t.Errorf("GOGC after the start = %d, want the one before it (80)", got)
	}
	if !strings.Contains(logs.String(), "start over") || !strings.Contains(logs.String(), "collections=") {
		t.Errorf("no log line for the end of the start, with its collections: %q", logs.String())
	}
}

// gogc reads GOGC without a collection's cleanup changing it meanwhile.
func gogc(g *Phase) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestStartGCPercent(t *testing.T) {
	cases := []struct {
		percent int
		live    uint64
		want    int
	}{
		{400, 0, 1600},       // before the first collection: Go's 4 MiB goal becomes 64 MiB
		{400, 4 << 20, 1600}, // 4 MiB kept: 4 + 64
		{400, 8 << 20, 800},  // 8 + 64
		{400, 16 << 20, 400}, // the crossover: 16 + 64 = 16 x 5
		{400, 64 << 20, 400},
		{400, 100 << 20, 400},  // a big node: --gc-start-percent's
		{1000, 16 << 20, 1000}, // a larger --gc-start-percent wins
		{400, 3 << 20, 2134},   // rounded up: at least 64 MiB
	}
	for _, c := range cases {
		if got := startGCPercent(c.percent, c.live); got != c.want {
			t.Errorf("startGCPercent(%d, %d) = %d, want %d", c.percent, c.live, got, c.want)
		}
	}
}

// TestGCStartFollowsCollections: after each collection of the start, GOGC
// gives the heap kept 64 MiB of headroom, or --gc-start-percent's if more;
// once the start is over, collections leave GOGC alone.
func TestGCStartFollowsCollections(t *testing.T) {
	if _, ok := lookupGOGC(); ok {
		t.Skip("$GOGC is set")
	}
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	g := New(400, slog.New(slog.DiscardHandler))
	if g == nil {
		t.Fatal("no start phase")
	}
	collect := func(t *testing.T) {
		t.Helper()
		g.mu.Lock()
		n := g.cycles
		g.mu.Unlock()
		for range 200 {
			runtime.GC()
			g.mu.Lock()
			done := g.cycles > n
			g.mu.Unlock()
			if done {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatal("no cleanup ran after 200 collections")
	}
	// 48 MiB kept: 4 x 48 is more than 64 MiB of headroom.
	kept := make([]*[1 << 20]byte, 48)
	for i := range kept {
		kept[i] = new([1 << 20]byte)
	}
	collect(t)
	collect(t) // a collection that ran before kept was made
	if got := gogc(g); got != 400 {
		t.Errorf("GOGC with 48 MiB kept = %d, want 400", got)
	}
	runtime.KeepAlive(kept)
	kept = nil
	collect(t)
	collect(t)
	// The collection the cleanup read may not be the last one: the heap
	// kept moves by a few KiB between them.
	live := liveHeap()
	if got, want := gogc(g), startGCPercent(400, live); got <= 400 || got < want*9/10 || got > want*11/10 {
		t.Errorf("GOGC with %d bytes kept = %d, want about %d (above 400)", live, got, want)
	}
	g.now = func() time.Time { return time.Now().Add(startMax) }
	done := make(chan error, 1)
	go func() { done <- g.Run(context.Background(), func() bool { return true }) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the start phase did not end")
	}
	for range 3 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	if got := gogc(g); got != 100 {
		t.Errorf("GOGC after the start and three collections = %d, want 100", got)
	}
}

func TestCheckGCStartPercent(t *testing.T) {
	for p, ok := range map[int]bool{-1: false, 0: true, 100: true, 400: true} {
		if err := CheckPercent(p); (err == nil) != ok {
			t.Errorf("CheckPercent(%d) = %v", p, err)
		}
	}
}

func TestCgroupMemoryLimit(t *testing.T) {
	write := func(t *testing.T, dir, name, v string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, file, value string
		want              int64
	}{
		{"v2 limit", "memory.max", "1073741824\n", 1 << 30},
		{"v2 none", "memory.max", "max\n", 0},
		{"v1 limit", "memory/memory.limit_in_bytes", "536870912\n", 512 << 20},
		{"v1 none", "memory/memory.limit_in_bytes", "9223372036854771712\n", 0},
		{"garbage", "memory.max", "lots\n", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, c.file, c.value)
			if got := cgroupMemoryLimit(dir); got != c.want {
				t.Errorf("cgroupMemoryLimit = %d, want %d", got, c.want)
			}
		})
	}
	if got := cgroupMemoryLimit(t.TempDir()); got != 0 {
		t.Errorf("no cgroup files: %d, want 0", got)
	}
}

func TestGCStartContainerLimit(t *testing.T) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		t.Skip("$GOMEMLIMIT is set")
	}
	if _, ok := lookupGOGC(); ok {
		t.Skip("$GOGC is set")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte("1073741824\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := cgroupRoot
	cgroupRoot = dir
	defer func() { cgroupRoot = old }()
	prevPct, prevLim := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	defer func() { debug.SetGCPercent(prevPct); debug.SetMemoryLimit(prevLim) }()

	g := New(400, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if got, want := debug.SetMemoryLimit(-1), int64(1<<30)/10*9; got != want {
		t.Errorf("memory limit while starting = %d, want %d (0.9 of the container's)", got, want)
	}
	base := time.Now()
	g.now = func() time.Time { return base.Add(time.Since(base) * 100) }
	if err := g.Run(context.Background(), func() bool { return true }); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != prevLim {
		t.Errorf("memory limit after the start = %d, want the one before it (%d)", got, prevLim)
	}
}
