package e2e

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/effects/gobgp"
	"github.com/peeragent/peeragent/internal/testrig/clustergen"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// The floor: a bare GoBGP server fed the agent's requests by a plain loop,
// the cheapest possible way to make the same calls.

// floorServer is a fresh embedded GoBGP server, not started.
func floorServer() *server.BgpServer {
	bgp := server.NewBgpServer(server.LoggerOption(quietLog()))
	go bgp.Serve()
	return bgp
}

// floorConverge starts bgp as the agent's executor would and configures
// the neighbors: per neighbor its policy objects, then AddPeer. It returns
// the time from StartBgp to the last AddPeer's return, and the CPU time.
func floorConverge(b *testing.B, bgp *server.BgpServer, srv state.Server, calls []gobgp.Calls) (wall, cpu time.Duration) {
	ctx := context.Background()
	runtime.GC()
	cpu0, t0 := cpuTime(), time.Now()
	must(b, bgp.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: srv.ASN, RouterId: srv.RouterID.String(),
		ListenPort: int32(srv.ListenPort), ListenAddresses: []string{"127.0.0.1"}}}))
	shared := gobgp.SharedRequests() // as the executor, before any neighbor's policy
	for _, r := range shared.Sets {
		must(b, bgp.AddDefinedSet(ctx, r))
	}
	for _, r := range shared.Policies {
		must(b, bgp.AddPolicy(ctx, r))
	}
	for _, r := range shared.Assignments {
		must(b, bgp.AddPolicyAssignment(ctx, r))
	}
	for _, c := range calls {
		for _, r := range c.Sets {
			must(b, bgp.AddDefinedSet(ctx, r))
		}
		for _, r := range c.Policies {
			must(b, bgp.AddPolicy(ctx, r))
		}
		if c.Member != nil {
			must(b, bgp.AddDefinedSet(ctx, c.Member))
		}
		must(b, bgp.AddPeer(ctx, c.Peer))
	}
	wall, cpu = time.Since(t0), cpuTime()-cpu0
	n := 0
	must(b, bgp.ListPeer(ctx, &api.ListPeerRequest{}, func(*api.Peer) { n++ }))
	if n != len(calls) {
		b.Fatalf("floor: %d peers configured, want %d", n, len(calls))
	}
	return wall, cpu
}

// floorStop stops a floor server: every peer goes.
func floorStop(b *testing.B, bgp *server.BgpServer) {
	must(b, bgp.StopBgp(context.Background(), &api.StopBgpRequest{}))
}

// churnRequests are the GoBGP requests the first n churn events of c
// amount to, derived by the pure core ahead of time: per event, the calls
// the executor makes for its one speaker effect, in the state the earlier
// events left (gobgp.PolicyBook, the executor's own record and planner:
// the neighbors' own policy objects made once, filters attached and
// detached in place). c churns policies only (in place): every event is a
// SetPolicy. The book starts as floorConverge leaves the speaker: every
// neighbor's policy installed before its peer was added.
func churnRequests(b *testing.B, c *clustergen.Cluster, n int) [][]gobgp.Request {
	s := reducer.FromScratch(c.Local, state.Options{}, c.Objects())
	book := gobgp.NewPolicyBook()
	s.Out.Neighbors.Range(func(_ string, nb *state.Neighbor) bool {
		_, err := book.SetPolicy(nb.Address, nb.Policy, false)
		must(b, err)
		return true
	})
	out := make([][]gobgp.Request, 0, n)
	for i := 0; i < n; i++ {
		next := reducer.Reduce(s, c.Churn(i).Action)
		speaker, _, _ := effects.Group(effects.Diff(s, next))
		if len(speaker) != 1 {
			b.Fatalf("churn event %d: %d speaker effects, want 1", i, len(speaker))
		}
		e, ok := speaker[0].(effects.SetPolicy)
		if !ok {
			b.Fatalf("churn event %d: %s, want a set-policy", i, speaker[0])
		}
		reqs, err := book.SetPolicy(e.Addr, e.Policy, true)
		must(b, err)
		out = append(out, reqs)
		s = next
	}
	return out
}

// floorChurn issues each event's requests one after the other, from the
// first event on, and measures the events from index from on: the floor
// of the agent's events with those indices, in the same state.
func floorChurn(b *testing.B, bgp *server.BgpServer, reqs [][]gobgp.Request, from int) churnResult {
	ctx := context.Background()
	lat := make([]time.Duration, 0, len(reqs)-from)
	runtime.GC()
	var t0 time.Time
	for i, calls := range reqs {
		t := time.Now()
		if i == from {
			t0 = t
		}
		for _, call := range calls {
			must(b, call.Do(ctx, bgp))
		}
		if i >= from {
			lat = append(lat, time.Since(t))
		}
	}
	el := time.Since(t0)
	slices.Sort(lat)
	return churnResult{rate: float64(len(lat)) / el.Seconds(), p50: percentile(lat, 0.50), p99: percentile(lat, 0.99)}
}
