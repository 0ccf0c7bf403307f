package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/clustergen"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// instantRoutes is a dataplane executor that takes every route at once
// and notes when its last call returned.
type instantRoutes struct {
	calls atomic.Int64
	want  int64
	last  chan time.Time
}

func (d *instantRoutes) Name() string                                   { return "linux" }
func (d *instantRoutes) Delete(context.Context, netip.Prefix) error     { return nil }
func (d *instantRoutes) ListOwn(context.Context) ([]state.Route, error) { return nil, nil }
func (d *instantRoutes) Replace(context.Context, state.Route) error {
	if d.calls.Add(1) == d.want {
		d.last <- time.Now()
	}
	return nil
}
func (d *instantRoutes) Execute(ctx context.Context, effs []effects.Effect) []state.Action {
	return effects.ApplyRoutes(ctx, d, effs)
}

type nopSpeaker struct{}

func (nopSpeaker) Execute(context.Context, []effects.Effect) []state.Action { return nil }

// BenchmarkLearnedLoop: the agent loop (agent.Loop with its journal and
// metrics) taking one best-path event of n learned prefixes onto a
// dataplane that takes each route at once (docs/routes.md §9.7): the
// loop's own share of installing learned routes, which
// effects/linux BenchmarkLearnedInstall leaves out. Reported per learned
// route: calls-us/route, from Dispatch to the dataplane's last call;
// applied-us/route, from Dispatch until the published State has every
// route applied (the results dispatched back and reduced); and
// core-us/route, the Reduce and Diff of the same event outside the loop,
// for comparison. Run with -benchtime 1x or a few.
func BenchmarkLearnedLoop(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			var calls, applied, core time.Duration
			for i := 0; i < b.N; i++ {
				c, a, k := learnedLoopOnce(b, n)
				calls, applied, core = calls+c, applied+a, core+k
			}
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(b.N*n) }
			b.ReportMetric(per(calls), "calls-us/route")
			b.ReportMetric(per(applied), "applied-us/route")
			b.ReportMetric(per(core), "core-us/route")
		})
	}
}

func learnedLoopOnce(b *testing.B, n int) (calls, applied, core time.Duration) {
	b.Helper()
	dp := &instantRoutes{want: int64(n), last: make(chan time.Time, 1)}
	last := state.PrefixKey(clustergen.LearnedPrefix(n - 1))
	done := make(chan time.Time, 1)
	var watching atomic.Bool
	l := NewLoop(LoopConfig{Initial: state.New("node-a", state.Options{}), Speaker: nopSpeaker{}, Dataplane: dp, Journal: 1000,
		Log: slog.New(slog.DiscardHandler), Published: []func(state.State){func(s state.State) {
			if !watching.Load() {
				return
			}
			if e, ok := s.Out.Routes.Get(last); ok && e.Phase == state.RoutePhaseApplied {
				watching.Store(false)
				done <- time.Now()
			}
		}}})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { l.Run(ctx); close(stopped) }()
	defer func() { cancel(); <-stopped }()
	for _, a := range clustergen.LearnedSetup() {
		l.Dispatch(a)
	}
	waitFor(b, "ready", l.Ready)
	s := l.State()
	ev := clustergen.LearnedEvent(s.Routing.SpeakerGen, n)
	start := time.Now()
	next := reducer.Reduce(s, ev)
	effects.Diff(s, next)
	core = time.Since(start)
	watching.Store(true)
	start = time.Now()
	l.Dispatch(ev)
	select {
	case t := <-dp.last:
		calls = t.Sub(start)
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d dataplane calls", dp.calls.Load(), n)
	}
	select {
	case t := <-done:
		applied = t.Sub(start)
	case <-time.After(5 * time.Minute):
		b.Fatal("the last route never showed applied")
	}
	return calls, applied, core
}
