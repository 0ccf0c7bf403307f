package e2e

import (
	"runtime"
	"testing"
	"time"

	"github.com/peeragent/peeragent/internal/testrig/clustergen"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// Scale benchmarks (targets: tools/perfdoc/targets.go; results:
// docs/performance.md): convergence against the GoBGP floor, churn
// against the floor and the old way, memory. Each iteration is a complete
// run, so run them with -benchtime 1x and -count for repetitions (make
// bench does); every figure is a b.ReportMetric, ns/op being the agent's
// own time. GoBGP servers run one at a time, never two at once (GoBGP's
// StartBgp sets package state).

// meshCluster is 1,000 nodes in the mesh: 999 neighbors.
func meshCluster(port int32) clustergen.Config {
	return clustergen.Config{Seed: 1, Nodes: 1000, ListenPort: port}
}

// tenKCluster is 10,000 BGPPeers (20% global, 30% selecting the local
// node by label, the rest naming it; 9% with a password Secret of their
// own, 10% with one of 4 BGPFilters), 100 nodes in the mesh and the
// route-reflector peer that node label changes move mesh neighbors to and
// from: 10,099 neighbors. Why 9%: Linux keeps a listening socket's MD5
// keys in its option memory (net.core.optmem_max, 128 KiB here), which
// holds about 960 keys; GoBGP logs "failed to set md5" for the others and
// could not accept their sessions, in the floor as in the agent.
func tenKCluster(port int32) clustergen.Config {
	return clustergen.Config{Seed: 2, Nodes: 100, Peers: 10000, Global: 0.2, Selected: 0.3,
		Password: 0.09, Filtered: 0.1, Filters: 4, ListenPort: port, Reflector: true}
}

// Churn: the offered rate (the target) and the number of events of each
// phase. At most floodWindow events await their call at once in a flood:
// fewer than the 297 events after which a node's label comes round again.
const (
	churnRate       = 5000
	sustainRate     = 2500 // the bar on stock GoBGP v4.8.0 (docs/performance.md): p99 under 5 ms at this rate
	lightRate       = 50   // well within GoBGP's capacity: latency without queueing
	gobgpLight      = 200  // four seconds at lightRate
	gobgpSustain    = 2500 // one second at sustainRate
	gobgpSteady     = 2500 // half a second at churnRate
	gobgpFlood      = 2000
	gobgpResetFlood = 1000
	instantSteady   = 10000 // two seconds at churnRate
	instantFlood    = 20000
	floodWindow     = 250
	oldEvents       = 5
	heapChurnEvents = 100000
)

// inPlace is the churn the rates and latencies of the targets are about:
// changes GoBGP applies without resetting the session (a BGPFilter
// attached or detached: docs/gobgp-updates.md).
var inPlace = []string{clustergen.ChurnPeer}

func inPlaceCluster(cfg clustergen.Config) *clustergen.Cluster {
	c := clustergen.Generate(cfg)
	c.Only = inPlace
	return c
}

// convergence accumulates the convergence figures of b.N runs.
type convergence struct {
	agent, agentCPU, floor, floorCPU time.Duration
	neighbors                        int
	heapPerNeighbor                  float64 // summed over runs; 0 when not measured
}

func (m convergence) report(b *testing.B) {
	n := float64(b.N)
	b.ReportMetric(float64(m.agent.Nanoseconds())/n, "ns/op")
	b.ReportMetric(m.agent.Seconds()/n, "agent-s")
	b.ReportMetric(m.floor.Seconds()/n, "floor-s")
	b.ReportMetric(m.agent.Seconds()/m.floor.Seconds(), "agent/floor")
	b.ReportMetric(m.agentCPU.Seconds()/n, "agent-cpu-s")
	b.ReportMetric(m.floorCPU.Seconds()/n, "floor-cpu-s")
	b.ReportMetric(m.agentCPU.Seconds()/m.floorCPU.Seconds(), "cpu-agent/floor")
	b.ReportMetric(float64(m.neighbors), "neighbors")
	if m.heapPerNeighbor > 0 {
		b.ReportMetric(m.heapPerNeighbor/n, "heap-B/neighbor")
	}
}

func BenchmarkConvergence(b *testing.B) {
	b.Run("mesh=1000", func(b *testing.B) {
		closeParked()
		var m convergence
		for i := 0; i < b.N; i++ {
			c := clustergen.Generate(meshCluster(benchPort(b)))
			srv, calls := desired(b, c)
			runs := []func(){func() {
				labelled("floor", func() {
					bgp := floorServer()
					w, cpu := floorConverge(b, bgp, srv, calls)
					m.floor, m.floorCPU = m.floor+w, m.floorCPU+cpu
					floorStop(b, bgp)
				})
			}, func() {
				labelled("agent", func() {
					r := newRig(c.Local)
					w, cpu := r.converge(b, c, len(calls))
					m.agent, m.agentCPU = m.agent+w, m.agentCPU+cpu
					r.close()
				})
			}}
			if i%2 == 1 { // take turns going first, so that neither inherits the other's leftovers
				runs[0], runs[1] = runs[1], runs[0]
			}
			runs[0]()
			runs[1]()
			m.neighbors = len(calls)
		}
		m.report(b)
	})
	b.Run("peers=10000", func(b *testing.B) {
		var m convergence
		for i := 0; i < b.N; i++ {
			closeParked()
			fx := buildTenK(b)
			m.agent, m.agentCPU = m.agent+fx.agent, m.agentCPU+fx.agentCPU
			m.floor, m.floorCPU = m.floor+fx.floor, m.floorCPU+fx.floorCPU
			m.neighbors = fx.want
			m.heapPerNeighbor += fx.heapPerNeighbor
			parked = fx // for BenchmarkChurn
		}
		m.report(b)
	})
}

func BenchmarkChurn(b *testing.B) {
	b.Run("gobgp", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			fx := takeTenK(b)
			time.Sleep(quiet)
			next := 0
			light := steady(b, fx.rig, fx.c, &next, lightRate, gobgpLight)
			sus := steady(b, fx.rig, fx.c, &next, sustainRate, gobgpSustain)
			st := steady(b, fx.rig, fx.c, &next, churnRate, gobgpSteady)
			fl := flood(b, fx.rig, fx.c, &next, gobgpFlood, floodWindow)
			// Resetting changes (password rotations, neighbors moving to
			// and from the route reflector), at their own rate.
			resets := clustergen.Generate(fx.cfg)
			resets.Only = []string{clustergen.ChurnSecret, clustergen.ChurnNode}
			nextReset := 0
			rs := flood(b, fx.rig, resets, &nextReset, gobgpResetFlood, floodWindow)
			fx.rig.stopLoop()
			var old float64
			labelled("old", func() { old = oldWay(b, fx.rig.exec, inPlaceCluster(fx.cfg), oldEvents) })
			_ = fx.rig.exec.Close()
			reportChurn(b, st, fl, old, fx.want)
			b.ReportMetric(light.p50.Seconds()*1e3, "light-p50-ms")
			b.ReportMetric(light.p99.Seconds()*1e3, "light-p99-ms")
			b.ReportMetric(sus.rate, "sustain-events/s")
			b.ReportMetric(sus.p50.Seconds()*1e3, "sustain-p50-ms")
			b.ReportMetric(sus.p99.Seconds()*1e3, "sustain-p99-ms")
			b.ReportMetric(rs.rate, "reset-events/s")
			b.ReportMetric(rs.p50.Seconds()*1e3, "reset-p50-ms")
			b.ReportMetric(rs.p99.Seconds()*1e3, "reset-p99-ms")
			fc := fx.floorChurn
			b.ReportMetric(fc.rate, "floor-events/s")
			b.ReportMetric(fc.p50.Seconds()*1e3, "floor-p50-ms")
			b.ReportMetric(fc.p99.Seconds()*1e3, "floor-p99-ms")
			b.ReportMetric(fl.rate/fc.rate, "max/floor")
		}
	})
	b.Run("instant", func(b *testing.B) {
		closeParked()
		for i := 0; i < b.N; i++ {
			c := clustergen.Generate(tenKCluster(179))
			c.Only = inPlace
			r, want := instantRig(b, c)
			next := 0
			var st, fl churnResult
			labelled("agent", func() {
				st = steady(b, r, c, &next, churnRate, instantSteady)
				fl = flood(b, r, c, &next, instantFlood, floodWindow)
			})
			r.close()
			var old float64
			labelled("old", func() { old = oldWay(b, instantSpeaker{}, inPlaceCluster(tenKCluster(179)), oldEvents) })
			reportChurn(b, st, fl, old, want)
		}
	})
}

// reportChurn reports a steady phase, a flood and the old way.
func reportChurn(b *testing.B, st, fl churnResult, old float64, neighbors int) {
	b.ReportMetric(float64(time.Second)/fl.rate, "ns/op")
	b.ReportMetric(st.rate, "steady-events/s")
	b.ReportMetric(st.p50.Seconds()*1e3, "p50-ms")
	b.ReportMetric(st.p99.Seconds()*1e3, "p99-ms")
	b.ReportMetric(fl.rate, "max-events/s")
	b.ReportMetric(old, "old-events/s")
	b.ReportMetric(fl.rate/old, "max/old")
	b.ReportMetric(float64(neighbors), "neighbors")
}

func BenchmarkMemory(b *testing.B) {
	closeParked()
	b.Run("state", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			per, n := stateBytesPerNeighbor(tenKCluster(179))
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(per, "B/neighbor")
			b.ReportMetric(float64(n), "neighbors")
		}
	})
	b.Run("churn=100000", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			before, mid, after := churnHeap(b, clustergen.Generate(tenKCluster(179)), heapChurnEvents)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(mib(before), "heap-before-MiB")
			b.ReportMetric(mib(mid), "heap-mid-MiB")
			b.ReportMetric(mib(after), "heap-after-MiB")
			b.ReportMetric(growth(before, after), "growth-%")
			b.ReportMetric(growth(mid, after), "late-growth-%")
		}
	})
}

// growth is the change from a to b in percent of a.
func growth(a, b uint64) float64 { return 100 * (float64(b) - float64(a)) / float64(a) }

// stateBytesPerNeighbor is the heap a State holds per neighbor: the live
// heap with the State of the whole cluster, every neighbor confirmed by
// the speaker, minus the live heap before the cluster existed.
func stateBytesPerNeighbor(cfg clustergen.Config) (float64, int) {
	base := heapAlloc()
	s := converged(clustergen.Generate(cfg))
	held := heapAlloc()
	n := s.Out.Neighbors.Len()
	runtime.KeepAlive(s)
	return float64(held-base) / float64(n), n
}

// converged is the cluster's State on its local node once the speaker has
// confirmed every neighbor.
func converged(c *clustergen.Cluster) state.State {
	s := reducer.FromScratch(c.Local, state.Options{}, c.Objects())
	var results []state.Action
	s.Out.Sessions.Range(func(_ string, x *state.Session) bool {
		results = append(results, state.PeerApplied{Address: x.Address, Gen: x.Gen})
		return true
	})
	for _, a := range results {
		s = reducer.Reduce(s, a)
	}
	return s
}
