package floor

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// The agent's start-phase GC policy (cmd/peeragent/gcpolicy.go,
// docs/performance.md "Garbage collection while the agent starts"), with
// its constants: while the speaker starts, GOGC is at least the start
// percent and the heap goal at least 64 MiB past the live heap; once
// nothing has happened for 10 s (no session change, no best path), or
// after 2 min, GOGC goes back and the freed memory to the OS. The agent
// takes "nothing happened" from its State; the floor from GoBGP's events.
// Without it the floor would collect at GOGC 100 from a 4 MiB heap, work
// the agent does not do.
const (
	startHeadroom = 64 << 20
	goHeapMinimum = 4 << 20
	startQuiet    = 10 * time.Second
	startMax      = 2 * time.Minute
)

type gcStart struct {
	percent int
	settled int
	last    atomic.Int64
	mu      sync.Mutex
	ended   bool
}

// newGCStart starts the phase; nil when percent is 0 or $GOGC is set.
func newGCStart(percent int) *gcStart {
	if percent == 0 || os.Getenv("GOGC") != "" {
		return nil
	}
	g := &gcStart{percent: percent}
	g.settled = debug.SetGCPercent(startGCPercent(percent, 0))
	g.touch()
	g.afterNextGC()
	return g
}

func startGCPercent(percent int, live uint64) int {
	if live == 0 {
		live = goHeapMinimum
	}
	return max(percent, int((startHeadroom*100+live-1)/live))
}

type gcSentinel struct {
	_ *byte
	_ [8]byte
}

func (g *gcStart) afterNextGC() { runtime.AddCleanup(new(gcSentinel), (*gcStart).collected, g) }

func (g *gcStart) collected() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended {
		return
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	var live uint64
	if s[0].Value.Kind() == metrics.KindUint64 {
		live = s[0].Value.Uint64()
	}
	debug.SetGCPercent(startGCPercent(g.percent, live))
	g.afterNextGC()
}

// touch notes that something happened (nil: no phase).
func (g *gcStart) touch() {
	if g != nil {
		g.last.Store(time.Now().UnixNano())
	}
}

// run ends the phase when the start is over, or returns when ctx ends.
func (g *gcStart) run(ctx context.Context) {
	if g == nil {
		return
	}
	began := time.Now()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if now.Sub(began) < startMax && now.Sub(time.Unix(0, g.last.Load())) < startQuiet {
				continue
			}
		}
		break
	}
	g.mu.Lock()
	g.ended = true
	debug.SetGCPercent(g.settled)
	g.mu.Unlock()
	debug.FreeOSMemory()
}
