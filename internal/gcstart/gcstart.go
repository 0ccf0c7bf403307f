// Package gcstart is the agent's garbage-collection policy while it starts
// (docs/performance.md "Garbage collection while the agent starts"); cmd/peeragent
// applies it, and tools/meshsim's GoBGP floor applies the same one.
package gcstart

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The agent's garbage-collection policy (docs/performance.md "Garbage
// collection while the agent starts"): while it starts (reads its objects,
// configures the speaker, brings the sessions up and learns the first
// routes) it allocates much and keeps most of it, so collecting at Go's
// default GOGC (100) is mostly wasted work; once its State has stopped
// changing the heap goal goes back to GOGC and the memory the start
// freed goes back to the OS at once, not over minutes.
const (
	// DefaultPercent is --gc-start-percent's default.
	DefaultPercent = 400
	// startHeadroom is the least the heap may grow past what the last
	// collection kept while the agent starts: a small node's whole start
	// (50 neighbors: ~15 MiB kept) then needs no collection, and a big
	// one's goal is --gc-start-percent's. The heap is never larger than
	// the crossover's, 16 MiB kept + 64 MiB, before a 16 MiB heap's goal
	// at GOGC 400 would be as large.
	startHeadroom = 64 << 20
	// goHeapMinimum is Go's heap goal before the first collection at
	// GOGC 100 (the runtime's heapMinimum, scaled by GOGC/100).
	goHeapMinimum = 4 << 20
	// startQuiet is how long the State must stay unchanged, after the loop
	// is ready, for the start to be over: longer than GoBGP's connect
	// retries (2-5 s), so that the sessions still coming up, and the routes
	// they bring, are part of the start.
	startQuiet = 10 * time.Second
	// startMax ends the start phase even if the State keeps changing
	// (a neighbor flapping, a manifest directory written to all the time).
	startMax = 2 * time.Minute
)

// gcStart is the start phase of the GC policy. observe is an observer of
// published State (agent.LoopConfig.Published); run ends the phase.
type Phase struct {
	percent int   // the least GOGC during the start
	settled int   // GOGC after it: $GOGC's or Go's default
	limit   int64 // the soft memory limit during the start (0: none set)
	prevLim int64 // the one before it
	last    atomic.Int64
	now     func() time.Time
	log     *slog.Logger

	mu     sync.Mutex // orders the collections' GOGC with the end
	ended  bool       // the start is over: GOGC is settled's
	cycles int        // collections during the start
}

// New applies the start's GOGC and returns the phase, or nil when
// there is none: --gc-start-percent 0, or $GOGC set (the user's GC setting
// wins, for the whole run).
func New(percent int, log *slog.Logger) *Phase {
	if percent == 0 {
		return nil
	}
	if v, ok := lookupGOGC(); ok {
		log.Info("$GOGC is set: no GC start phase", "GOGC", v)
		return nil
	}
	g := &Phase{percent: percent, now: time.Now, log: log}
	g.settled = debug.SetGCPercent(startGCPercent(percent, 0))
	// A larger GOGC must not take a big node's agent past its container's
	// memory limit while it starts: the limit (less a tenth for what is
	// not heap) bounds the heap then, unless $GOMEMLIMIT sets one already.
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		if c := cgroupMemoryLimit(cgroupRoot); c > 0 {
			g.limit = c / 10 * 9
			g.prevLim = debug.SetMemoryLimit(g.limit)
		}
	}
	g.last.Store(g.now().UnixNano())
	g.afterNextGC()
	return g
}

// startGCPercent is the GOGC during the start once a collection kept live
// bytes (0: none yet, Go's first goal): the heap goal is at least
// startHeadroom past live, and GOGC at least percent.
func startGCPercent(percent int, live uint64) int {
	if live == 0 {
		live = goHeapMinimum
	}
	return max(percent, int((startHeadroom*100+live-1)/live))
}

// gcSentinel is an object whose cleanup runs after the collection that
// finds it unreachable (pointerful and 16 bytes, so that it is not one of
// the tiny allocator's shared blocks).
type gcSentinel struct {
	_ *byte
	_ [8]byte
}

// afterNextGC sets GOGC from the live heap after the next collection, and
// again after each one until the start is over.
func (g *Phase) afterNextGC() {
	runtime.AddCleanup(new(gcSentinel), (*Phase).collected, g)
}

// collected runs after each collection of the start.
func (g *Phase) collected() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended {
		return
	}
	g.cycles++
	debug.SetGCPercent(startGCPercent(g.percent, liveHeap()))
	g.afterNextGC()
}

// liveHeap is the heap the last collection kept, in bytes (0 before one).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// lookupGOGC is $GOGC, if set and not empty (Go's runtime reads an empty
// $GOGC as unset: GOGC 100).
func lookupGOGC() (string, bool) {
	v := os.Getenv("GOGC")
	return v, v != ""
}

// Touch notes that the State (or what stands for it) changed just now;
// a nil Phase (none) ignores it.
func (g *Phase) Touch() {
	if g != nil {
		g.last.Store(g.now().UnixNano())
	}
}

// over reports whether the start is over at now: the loop is ready and
// the State has not changed for startQuiet, or startMax has passed.
func (g *Phase) over(ready bool, began, now time.Time) bool {
	if now.Sub(began) >= startMax {
		return true
	}
	return ready && now.Sub(time.Unix(0, g.last.Load())) >= startQuiet
}

// Run waits for the start to be over, then sets GOGC back and returns the
// freed memory to the OS. It returns when ctx ends, or once it is done.
func (g *Phase) Run(ctx context.Context, ready func() bool) error {
	if g == nil {
		return nil
	}
	began := g.now()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if g.over(ready(), began, g.now()) {
			break
		}
	}
	g.mu.Lock()
	g.ended = true
	debug.SetGCPercent(g.settled)
	cycles := g.cycles
	g.mu.Unlock()
	if g.limit > 0 {
		debug.SetMemoryLimit(g.prevLim)
	}
	debug.FreeOSMemory()
	g.log.Info("start over: GC back to GOGC, freed memory returned to the OS", "GOGC", g.settled,
		"after", g.now().Sub(began).Round(time.Millisecond), "collections", cycles)
	return nil
}

// cgroupRoot is where the process's cgroup is mounted (in a container:
// its own, through the cgroup namespace); tests change it.
var cgroupRoot = "/sys/fs/cgroup"

// cgroupMemoryLimit is the memory limit of the cgroup mounted at root
// (cgroup v2 memory.max, else v1 memory/memory.limit_in_bytes) in bytes,
// or 0 when there is none or it cannot be read.
func cgroupMemoryLimit(root string) int64 {
	for _, f := range []string{"memory.max", "memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 { // v1's "none" is a page-rounded MaxInt64
			return 0
		}
		return n
	}
	return 0
}

// CheckPercent validates --gc-start-percent.
func CheckPercent(p int) error {
	if p < 0 {
		return fmt.Errorf("--gc-start-percent %d: want a GOGC percentage, or 0 for no start phase", p)
	}
	return nil
}
