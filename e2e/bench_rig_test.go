package e2e

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"runtime"
	"runtime/pprof"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/effects/gobgp"
	"github.com/peeragent/peeragent/internal/testrig/clustergen"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// The benchmarks' rig: the real Loop over the real GoBGP executor, with
// the speaker wrapped to timestamp every Execute. Nothing here runs unless
// a benchmark does.

// timedSpeaker wraps the speaker's executor: it counts results and, for
// each address marked as awaited, records the time from the mark to the
// return of the first Execute that carried an effect for it.
type timedSpeaker struct {
	inner effects.Executor
	mu    sync.Mutex
	// applied and failed count PeerApplied and PeerApplyFailed results;
	// firstStart is when the first Execute began, lastAt when the last
	// one returned.
	applied, failed    int
	firstErr           string
	firstStart, lastAt time.Time
	pending            map[netip.Addr]time.Time
	lat                []time.Duration
}

func newTimedSpeaker(inner effects.Executor) *timedSpeaker {
	return &timedSpeaker{inner: inner, pending: map[netip.Addr]time.Time{}}
}

func (s *timedSpeaker) Execute(ctx context.Context, effs []effects.Effect) []state.Action {
	s.mu.Lock()
	if s.firstStart.IsZero() {
		s.firstStart = time.Now()
	}
	s.mu.Unlock()
	res := s.inner.Execute(ctx, effs)
	at := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastAt = at
	for _, r := range res {
		switch r := r.(type) {
		case state.PeerApplied:
			s.applied++
		case state.PeerApplyFailed:
			s.failed++
			if s.firstErr == "" {
				s.firstErr = r.Error
			}
		}
	}
	for _, e := range effs {
		if t, ok := s.pending[e.Address()]; ok {
			s.lat = append(s.lat, at.Sub(t))
			delete(s.pending, e.Address())
		}
	}
	return res
}

// mark awaits an effect for addr from at on.
func (s *timedSpeaker) mark(addr netip.Addr, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending[addr] = at
}

func (s *timedSpeaker) isPending(addr netip.Addr) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.pending[addr]
	return ok
}

// counts returns the results so far and the number of latencies recorded.
func (s *timedSpeaker) counts() (applied, failed, done int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied, s.failed, len(s.lat)
}

// takeLatencies returns and forgets the latencies recorded, with the time
// the last Execute returned.
func (s *timedSpeaker) takeLatencies() ([]time.Duration, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lat, at := s.lat, s.lastAt
	s.lat = nil
	return lat, at
}

// waitUntil polls cond every so often until it holds or timeout. The
// times measured come from the timed speaker, not from the poll, so the
// poll can be rare: on two cores a busy poller would slow the agent.
func waitUntil(b testing.TB, what string, timeout, every time.Duration, cond func() bool) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if !poll(ctx, every, cond) {
		b.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// rig is one agent: the Loop running over a timed executor.
type rig struct {
	exec    *gobgp.Executor // nil over the instant speaker
	speaker *timedSpeaker
	loop    *agent.Loop
	cancel  context.CancelFunc
	done    chan struct{}
}

// newRig is the agent over an embedded GoBGP listening on 127.0.0.1.
func newRig(local string) *rig {
	exec := gobgp.New(gobgp.Options{ListenAddresses: []string{"127.0.0.1"}, Logger: discardLogger(), GoBGPLevel: slog.LevelWarn})
	r := startRig(local, newTimedSpeaker(exec))
	r.exec = exec
	return r
}

func startRig(local string, sp *timedSpeaker) *rig {
	r := &rig{speaker: sp, done: make(chan struct{})}
	r.loop = agent.NewLoop(agent.LoopConfig{Initial: state.New(local, state.Options{}), Speaker: sp,
		Log: discardLogger(), Journal: 1000})
	var ctx context.Context
	ctx, r.cancel = context.WithCancel(context.Background())
	go func() { defer close(r.done); r.loop.Run(ctx) }()
	return r
}

// stopLoop ends the loop; the speaker keeps running.
func (r *rig) stopLoop() {
	r.cancel()
	<-r.done
}

// close ends the loop and the speaker (StopBgp drops every neighbor).
func (r *rig) close() {
	r.stopLoop()
	if r.exec != nil {
		_ = r.exec.Close()
	}
}

// converge dispatches the cluster's lists and waits until the speaker has
// confirmed want neighbors. It returns the time from the first action to
// the return of the Execute that confirmed the last one, and the CPU time
// the process spent meanwhile.
func (r *rig) converge(b *testing.B, c *clustergen.Cluster, want int) (wall, cpu time.Duration) {
	runtime.GC()
	cpu0, t0 := cpuTime(), time.Now()
	for _, a := range c.Actions() {
		r.loop.Dispatch(a)
	}
	waitUntil(b, "convergence", 10*time.Minute, 2*time.Millisecond, func() bool {
		applied, failed, _ := r.speaker.counts()
		return applied+failed >= want
	})
	cpu = cpuTime() - cpu0
	if _, failed, _ := r.speaker.counts(); failed > 0 {
		b.Fatalf("%d neighbors failed, first: %s", failed, r.speaker.firstErr)
	}
	_, at := r.speaker.takeLatencies()
	if testing.Verbose() {
		b.Logf("first call after %s, last call returned after %s", r.speaker.firstStart.Sub(t0), at.Sub(t0))
	}
	return at.Sub(t0), cpu
}

// settle waits until the loop has reduced every result: want sessions
// are configured.
func (r *rig) settle(b *testing.B, want int) {
	waitUntil(b, "settled sessions", 5*time.Minute, 20*time.Millisecond, func() bool {
		n := 0
		r.loop.State().Out.Sessions.Range(func(_ string, s *state.Session) bool {
			if s.Phase == state.PhaseConfigured {
				n++
			}
			return true
		})
		return n == want
	})
}

// desired derives the cluster's neighbors on its local node and the GoBGP
// requests that configure them, in address order (the agent's order).
func desired(b *testing.B, c *clustergen.Cluster) (state.Server, []gobgp.Calls) {
	s := reducer.FromScratch(c.Local, state.Options{}, c.Objects())
	var calls []gobgp.Calls
	s.Out.Neighbors.Range(func(_ string, n *state.Neighbor) bool {
		if !n.Active() {
			b.Fatalf("neighbor %s is held back: %s", n.Address, n.Waiting)
		}
		cl, err := gobgp.CallsFor(n)
		if err != nil {
			b.Fatal(err)
		}
		calls = append(calls, cl)
		return true
	})
	return s.Server, calls
}

// labelled runs fn with the pprof label run=what, which the goroutines it
// starts (the loop, GoBGP's) inherit: `go tool pprof -tagfocus run=agent`
// then shows the agent's runs alone.
func labelled(what string, fn func()) {
	pprof.Do(context.Background(), pprof.Labels("run", what), func(context.Context) { fn() })
}

// cpuTime is the CPU time (user and system) the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapAlloc is the live heap after a full collection.
func heapAlloc() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// freePort is a TCP port free on 127.0.0.1 right now.
func must(b testing.TB, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// quietLog is a logger that drops GoBGP's messages, as the agent's does
// at its default level (warnings and up pass its level check; here
// discarded).
func quietLog() (*slog.Logger, *slog.LevelVar) {
	lv := new(slog.LevelVar)
	lv.Set(slog.LevelWarn)
	return slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: lv})), lv
}
