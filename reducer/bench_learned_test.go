package reducer_test

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/clustergen"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// instantDataplane returns at once: what is left is the pure core's
// latency from a best-path event to the dataplane call (docs/routes.md §10).
type instantDataplane struct{ calls int }

func (d *instantDataplane) Name() string { return "linux" }
func (d *instantDataplane) Replace(context.Context, state.Route) error {
	d.calls++
	return nil
}
func (d *instantDataplane) Delete(context.Context, netip.Prefix) error { d.calls++; return nil }
func (d *instantDataplane) ListOwn(context.Context) ([]state.Route, error) {
	return nil, nil
}

// learnedPrefix is the i-th /32 of 100.64.0.0/10, inside the pool.
func learnedPrefix(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{100, byte(64 + i>>16), byte(i >> 8), byte(i)}), 32)
}

func learnedPaths(p netip.Prefix, nh netip.Addr) state.BestPaths {
	return state.BestPaths{Prefix: p, Paths: []state.LearnedPath{{NextHops: []netip.Addr{nh}, Neighbor: nh}}}
}

// BenchmarkBestPathChange: with 10,000 learned prefixes installed
// (docs/routes.md §9.2), one prefix's best path moves between node-b and
// node-c; each op is Reduce + Diff of that BestPathsChanged and the call
// on an instant dataplane (§10), its result reduced outside the timing.
// Reported: p50-ms and p99-ms of the per-change latency.
func BenchmarkBestPathChange(b *testing.B) {
	const installed = 10000
	nb, nc := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	s := learnedBase()
	dp := &instantDataplane{}
	ctx := context.Background()
	apply := func(s state.State, a state.Action) (state.State, int) {
		next := reducer.Reduce(s, a)
		effs := effects.Diff(s, next)
		res := effects.ApplyRoutes(ctx, dp, effs)
		for _, r := range res {
			next = reducer.Reduce(next, r)
		}
		return next, len(effs)
	}
	ev := state.BestPathsChanged{Gen: 1, Prefixes: make([]state.BestPaths, installed)}
	for i := range ev.Prefixes {
		ev.Prefixes[i] = learnedPaths(learnedPrefix(i), nb)
	}
	s, n := apply(s, ev)
	if n < installed || dp.calls != installed {
		b.Fatalf("%d effects, %d calls for %d learned prefixes", n, dp.calls, installed)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		nh := nc
		if (i/installed)%2 == 1 { // each prefix moves to node-c, then back
			nh = nb
		}
		a := state.BestPathsChanged{Gen: 1, Prefixes: []state.BestPaths{learnedPaths(learnedPrefix(i%installed), nh)}}
		calls := dp.calls
		start := time.Now()
		next := reducer.Reduce(s, a)
		effs := effects.Diff(s, next)
		res := effects.ApplyRoutes(ctx, dp, effs)
		lat = append(lat, time.Since(start))
		if dp.calls != calls+1 {
			b.Fatalf("change %d: %d dataplane calls, want 1", i, dp.calls-calls)
		}
		for _, r := range res {
			next = reducer.Reduce(next, r)
		}
		s = next
	}
	b.StopTimer()
	slices.Sort(lat)
	q := func(f float64) float64 { return lat[int(f*float64(len(lat)-1))].Seconds() * 1e3 }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

var learnedEach = flag.Bool("learned-each", false, "BenchmarkLearnedEvent: also time Reduce of each result in turn")

// learnedBase is clustergen.LearnedSetup's node-a (10.0.0.1/24, one flat
// pool, the table live on a dataplane that holds nothing) with node-c
// (10.0.0.3/24) in the mesh too, next to node-b.
func learnedBase() state.State {
	return fromScratch(append(clustergen.LearnedSetup(),
		state.NodeUpserted{Node: state.Node{Name: "node-c", IPv4Address: "10.0.0.3/24"}}))
}

// BenchmarkLearnedEvent: the pure core's share of installing n learned
// prefixes from one peer (docs/routes.md §9.2, §10), per op: Reduce and
// Diff of one BestPathsChanged listing them all (core), then Reduce of
// the n results the dataplane reports in one step, as the agent loop does
// (results: reducer.ReduceRouteResults; the instant dataplane's calls are
// not timed). Reported per learned route: core-us/route, results-us/route
// and, with -learned-each, results-each-us/route (Reduce of each result
// in turn, for comparison). effects/linux BenchmarkLearnedInstall sets the
// same core against the kernel.
func BenchmarkLearnedEvent(b *testing.B) {
	each := *learnedEach
	nb := netip.MustParseAddr("10.0.0.2")
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			base := learnedBase()
			ev := state.BestPathsChanged{Gen: 1, Prefixes: make([]state.BestPaths, n)}
			for i := range ev.Prefixes {
				ev.Prefixes[i] = learnedPaths(learnedPrefix(i), nb)
			}
			ctx := context.Background()
			var core, results, oneByOne time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				next := reducer.Reduce(base, ev)
				effs := effects.Diff(base, next)
				core += time.Since(start)
				dp := &instantDataplane{}
				res := effects.ApplyRoutes(ctx, dp, effs)
				if dp.calls != n || len(res) != n {
					b.Fatalf("%d calls, %d results for %d learned prefixes", dp.calls, len(res), n)
				}
				applied := make([]state.TableRouteApplied, len(res))
				for i, r := range res {
					applied[i] = r.(state.TableRouteApplied)
				}
				start = time.Now()
				done := reducer.ReduceRouteResults(next, applied)
				results += time.Since(start)
				if each {
					start = time.Now()
					for _, r := range res {
						next = reducer.Reduce(next, r)
					}
					oneByOne += time.Since(start)
				}
				if e, _ := done.Out.Routes.Get(state.PrefixKey(learnedPrefix(n - 1))); e == nil || e.Phase != state.RoutePhaseApplied {
					b.Fatalf("last route %+v, want applied", e)
				}
			}
			per := float64(b.N) * float64(n) * 1e3
			b.ReportMetric(float64(core.Nanoseconds())/per, "core-us/route")
			b.ReportMetric(float64(results.Nanoseconds())/per, "results-us/route")
			if each {
				b.ReportMetric(float64(oneByOne.Nanoseconds())/per, "results-each-us/route")
			}
		})
	}
}
