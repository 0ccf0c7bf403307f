package linux

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// learnedSizes: learned /32 prefixes from one peer (docs/routes.md §9.2).
// At 100,000 the Linux executor is left out ("/instant": the same core on
// a dataplane that returns at once): its Replace dumps the whole table to
// look for a foreign route (§9.7 rule 2), so an install of n routes is
// quadratic (50 s at 10,000).
var learnedSizes = []int{1000, 10000, 100000}

const kernelMax = 10000

// instantDataplane returns at once.
type instantDataplane struct{}

func (instantDataplane) Name() string                                   { return "linux" }
func (instantDataplane) Replace(context.Context, state.Route) error     { return nil }
func (instantDataplane) Delete(context.Context, netip.Prefix) error     { return nil }
func (instantDataplane) ListOwn(context.Context) ([]state.Route, error) { return nil, nil }

// learnedPrefix is the i-th /32 of 100.64.0.0/10, inside the pool.
func learnedPrefix(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{100, byte(64 + i>>16), byte(i >> 8), byte(i)}), 32)
}

// learnedState is node-a (10.0.0.1/24) with node-b (10.0.0.2) in the mesh,
// one flat pool, and the table live on the Linux dataplane with nothing
// held (docs/routes.md §9.6): what the agent holds before its first
// best-path event.
func learnedState() state.State {
	acts := []state.Action{
		state.SourceSynced{Kind: state.KindBGPConfiguration, Configs: []state.BGPConfiguration{{Name: "default", ASNumber: 64512}}},
		state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{
			{Name: "node-a", IPv4Address: "10.0.0.1/24"}, {Name: "node-b", IPv4Address: "10.0.0.2/24"}}},
		state.SourceSynced{Kind: state.KindBGPPeer},
		state.SourceSynced{Kind: state.KindBGPFilter},
		state.SourceSynced{Kind: state.KindPod},
		state.SourceSynced{Kind: state.KindIPPool, Pools: []state.IPPool{
			{Name: "pods", CIDR: "100.64.0.0/10", IPIPMode: "Never", VXLANMode: "Never"}}},
		state.SourceSynced{Kind: state.KindBlockAffinity},
		state.RoutesListed{Dataplane: "linux"},
	}
	s := state.New("node-a", state.Options{})
	for _, a := range acts {
		s = reducer.Reduce(s, a)
	}
	return s
}

// learnedEvent is one best-path event carrying n prefixes via node-b.
func learnedEvent(n int) state.BestPathsChanged {
	nb := netip.MustParseAddr("10.0.0.2")
	ev := state.BestPathsChanged{Gen: 1, Prefixes: make([]state.BestPaths, n)}
	for i := range ev.Prefixes {
		ev.Prefixes[i] = state.BestPaths{Prefix: learnedPrefix(i),
			Paths: []state.LearnedPath{{NextHops: []netip.Addr{nb}, Neighbor: nb}}}
	}
	return ev
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
//     executor's route calls (effects.ApplyRoutes, what Execute runs),
//     then Reduce of its results.
//
// Reported: floor-s, agent-s, core-s (Reduce+Diff alone), ratio
// (agent/floor) and heap-B/route (the State's HeapAlloc growth after GC
// over the event and its results, per learned route). Run with
// -benchtime 1x.
func BenchmarkLearnedInstall(b *testing.B) {
	for _, n := range learnedSizes {
		name := fmt.Sprintf("routes=%d", n)
		if n > kernelMax {
			name += "/instant"
		}
		b.Run(name, func(b *testing.B) {
			var floor, agent, core time.Duration
			var perRoute float64
			for i := 0; i < b.N; i++ {
				floor += installFloor(b, n)
				a, c, h := installAgent(b, n)
				agent, core, perRoute = agent+a, core+c, h
			}
			b.ReportMetric(floor.Seconds()/float64(b.N), "floor-s")
			b.ReportMetric(agent.Seconds()/float64(b.N), "agent-s")
			b.ReportMetric(core.Seconds()/float64(b.N), "core-s")
			b.ReportMetric(agent.Seconds()/floor.Seconds(), "ratio")
			b.ReportMetric(perRoute, "heap-B/route")
		})
	}
}

func installFloor(b *testing.B, n int) time.Duration {
	ns := newNS(b)
	gw := net.ParseIP("10.0.0.2")
	start := time.Now()
	for i := 0; i < n; i++ {
		p := learnedPrefix(i)
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
	countOwn(b, ns, n)
	return d
}

func installAgent(b *testing.B, n int) (total, core time.Duration, heapPerRoute float64) {
	kernel := n <= kernelMax
	var ns *testNS
	var dp effects.Dataplane = instantDataplane{}
	if kernel {
		ns = newNS(b)
		dp = New(ns.h, Options{})
	}
	s := learnedState()
	before := heapAlloc()
	ev := learnedEvent(n)
	start := time.Now()
	next := reducer.Reduce(s, ev)
	effs := effects.Diff(s, next)
	core = time.Since(start)
	res := effects.ApplyRoutes(context.Background(), dp, effs)
	total = time.Since(start)
	if len(effs) < n {
		b.Fatalf("agent: %d effects for %d learned prefixes", len(effs), n)
	}
	s = next
	for _, a := range res {
		if f, ok := a.(state.TableRouteApplyFailed); ok {
			b.Fatalf("agent: %s: %s", f.Prefix, f.Error)
		}
		s = reducer.Reduce(s, a)
	}
	ev, effs, res, next = state.BestPathsChanged{}, nil, nil, state.State{}
	after := heapAlloc()
	runtime.KeepAlive(s)
	if kernel {
		countOwn(b, ns, n)
	}
	return total, core, float64(int64(after)-int64(before)) / float64(n)
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
