package linux

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/clustergen"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// learnedSizes: learned /32 prefixes from one peer (docs/routes.md §9.2).
var learnedSizes = []int{1000, 10000, 100000}

// learnedState is LearnedSetup reduced: node-a with node-b in the mesh,
// one flat pool, and the table live on the Linux dataplane with nothing
// held.
func learnedState() state.State {
	s := state.New("node-a", state.Options{})
	for _, a := range clustergen.LearnedSetup() {
		s = reducer.Reduce(s, a)
	}
	return s
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkLearnedInstall: n learned prefixes from one peer into the
// kernel (docs/routes.md §9.2, §9.7, §10), each in a network namespace of
// its own, in one iteration:
//   - floor: a bare loop of netlink RouteReplace of the same n /32 routes
//     (protocol 201, metric 1024, one next hop on dp0);
//   - agent: Reduce of one BestPathsChanged + effects.Diff + the Linux
//     executor's route calls (effects.ApplyRoutes, what Execute runs):
//     from the event to the last route in the kernel;
//   - results: then the reduction of the n results, as the agent loop
//     makes it (reducer.ReduceRouteResults), after which the State has
//     every route applied: timed on its own, not part of agent-s.
//
// Reported: floor-s, agent-s, core-s (Reduce+Diff alone), results-s,
// ratio (agent/floor), ratio-with-results ((agent+results)/floor), the
// process CPU time (user+sys, the runtime's own threads included) of the
// floor and the agent, floor-cpu-s and agent-cpu-s, and their cpu-ratio
// (less sensitive than wall time to a shared machine), and heap-B/route
// (the HeapAlloc growth after GC over the event and its results, per
// learned route: the State and the executor's ownership of the routes).
// Run with -benchtime 1x.
func BenchmarkLearnedInstall(b *testing.B) {
	for _, n := range learnedSizes {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			var floor, agent, core, results, floorCPU, agentCPU time.Duration
			var perRoute float64
			for i := 0; i < b.N; i++ {
				var c time.Duration
				floor += installFloor(b, n, &c)
				floorCPU += c
				r := installAgent(b, n)
				agent, core, results, perRoute = agent+r.total, core+r.core, results+r.results, r.heapPerRoute
				agentCPU += r.cpu
			}
			b.ReportMetric(floor.Seconds()/float64(b.N), "floor-s")
			b.ReportMetric(agent.Seconds()/float64(b.N), "agent-s")
			b.ReportMetric(core.Seconds()/float64(b.N), "core-s")
			b.ReportMetric(results.Seconds()/float64(b.N), "results-s")
			b.ReportMetric(agent.Seconds()/floor.Seconds(), "ratio")
			b.ReportMetric((agent+results).Seconds()/floor.Seconds(), "ratio-with-results")
			b.ReportMetric(floorCPU.Seconds()/float64(b.N), "floor-cpu-s")
			b.ReportMetric(agentCPU.Seconds()/float64(b.N), "agent-cpu-s")
			b.ReportMetric(agentCPU.Seconds()/floorCPU.Seconds(), "cpu-ratio")
			b.ReportMetric(perRoute, "heap-B/route")
		})
	}
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// installFloor returns the loop's wall time; cpu becomes its CPU time.
func installFloor(b *testing.B, n int, cpu *time.Duration) time.Duration {
	ns := newNS(b)
	gw := net.ParseIP("10.0.0.2")
	cpu0 := processCPU()
	start := time.Now()
	for i := 0; i < n; i++ {
		p := clustergen.LearnedPrefix(i)
		r := &netlink.Route{
			Dst:       &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(32, 32)},
			Gw:        gw,
			LinkIndex: ns.link.Attrs().Index,
			Table:     unix.RT_TABLE_MAIN,
			Protocol:  DefaultProtocol,
			Priority:  DefaultMetric,
		}
		if err := ns.h.RouteReplace(r); err != nil {
			b.Fatalf("floor: %s: %v", p, err)
		}
	}
	d := time.Since(start)
	*cpu = processCPU() - cpu0
	countOwn(b, ns, n)
	return d
}

type agentRun struct {
	total, core, results, cpu time.Duration
	heapPerRoute              float64
}

func installAgent(b *testing.B, n int) agentRun {
	ns := newNS(b)
	dp := New(ns.h, Options{})
	s := learnedState()
	before := heapAlloc()
	ev := clustergen.LearnedEvent(1, n)
	var r agentRun
	cpu0 := processCPU()
	start := time.Now()
	next := reducer.Reduce(s, ev)
	effs := effects.Diff(s, next)
	r.core = time.Since(start)
	res := effects.ApplyRoutes(context.Background(), dp, effs)
	r.total = time.Since(start)
	r.cpu = processCPU() - cpu0
	if len(effs) < n {
		b.Fatalf("agent: %d effects for %d learned prefixes", len(effs), n)
	}
	applied := make([]state.TableRouteApplied, 0, len(res))
	for _, a := range res {
		ok, isOK := a.(state.TableRouteApplied)
		if !isOK {
			b.Fatalf("agent: %#v", a)
		}
		applied = append(applied, ok)
	}
	start = time.Now()
	s = reducer.ReduceRouteResults(next, applied)
	r.results = time.Since(start)
	if e, _ := s.Out.Routes.Get(state.PrefixKey(clustergen.LearnedPrefix(n - 1))); e == nil || e.Phase != state.RoutePhaseApplied {
		b.Fatalf("agent: last route %+v, want applied", e)
	}
	ev, effs, res, applied, next = state.BestPathsChanged{}, nil, nil, nil, state.State{}
	after := heapAlloc()
	runtime.KeepAlive(s)
	runtime.KeepAlive(dp) // its ownership of the routes is the agent's heap too
	countOwn(b, ns, n)
	r.heapPerRoute = float64(int64(after)-int64(before)) / float64(n)
	return r
}

func countOwn(b *testing.B, ns *testNS, n int) {
	b.Helper()
	got, err := New(ns.h, Options{}).ListOwn(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if len(got) != n {
		b.Fatalf("%d own routes in the kernel, want %d", len(got), n)
	}
}
