package e2e

import (
	"testing"
	"time"

	"github.com/peeragent/peeragent/internal/testrig/clustergen"
)

// tenK is the 10,000-BGPPeer setup that BenchmarkConvergence measures and
// BenchmarkChurn goes on with: configuring 10,000 neighbors into GoBGP
// takes a minute or more (each GoBGP call costs O(neighbors)), so a run
// does it once. The floor server is stopped before the agent's starts.
type tenK struct {
	cfg  clustergen.Config
	c    *clustergen.Cluster
	want int
	rig  *rig // converged and settled, running
	// Convergence of the agent and the floor: wall and CPU time.
	agent, agentCPU, floor, floorCPU time.Duration
	// heapPerNeighbor: the agent's and its speaker's live heap per
	// configured neighbor, once converged and settled.
	heapPerNeighbor float64
	// floorChurn: the in-place churn's GoBGP calls, issued directly: the
	// light, steady and flood phases' events in order, the flood's timed.
	floorChurn churnResult
}

// quiet is how long a freshly configured speaker is left alone before
// churn is measured on it, the floor's as the agent's.
const quiet = 2 * time.Second

// parked is the setup the last convergence run left running.
var parked *tenK

// takeTenK takes the parked setup, or makes one.
func takeTenK(b *testing.B) *tenK {
	if fx := parked; fx != nil {
		parked = nil
		return fx
	}
	return buildTenK(b)
}

// closeParked stops the parked setup's speaker, before another starts.
func closeParked() {
	if parked != nil {
		parked.rig.close()
		parked = nil
	}
}

// buildTenK measures the floor (convergence, then churn) and the agent's
// convergence, and leaves the agent running.
func buildTenK(b *testing.B) *tenK {
	fx := &tenK{cfg: tenKCluster(benchPort(b))}
	fx.c = inPlaceCluster(fx.cfg)
	srv, calls := desired(b, fx.c)
	fx.want = len(calls)
	reqs := churnRequests(b, fx.c, gobgpLight+gobgpSustain+gobgpSteady+gobgpFlood)
	labelled("floor", func() {
		bgp := floorServer()
		fx.floor, fx.floorCPU = floorConverge(b, bgp, srv, calls)
		time.Sleep(quiet)
		fx.floorChurn = floorChurn(b, bgp, reqs, gobgpLight+gobgpSustain+gobgpSteady)
		floorStop(b, bgp)
	})
	labelled("agent", func() {
		base := heapAlloc()
		fx.rig = newRig(fx.c.Local)
		fx.agent, fx.agentCPU = fx.rig.converge(b, fx.c, fx.want)
		fx.rig.settle(b, fx.want)
		fx.heapPerNeighbor = (float64(heapAlloc()) - float64(base)) / float64(fx.want)
	})
	return fx
}
