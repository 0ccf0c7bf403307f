package main

import (
	"context"
	"net/netip"
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
	must(b, bgp.AddPolicy(ctx, shared.Policy))
	must(b, bgp.AddPolicyAssignment(ctx, shared.Assignment))
	for _, c := range calls {
		for _, r := range c.Sets {
			must(b, bgp.AddDefinedSet(ctx, r))
		}
		for _, r := range c.Policies {
			must(b, bgp.AddPolicy(ctx, r))
		}
		for _, r := range c.Assignments {
			must(b, bgp.AddPolicyAssignment(ctx, r))
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

// floorCall is one GoBGP request of the floor, issued as is.
type floorCall func(context.Context, *server.BgpServer) error

// churnRequests are the GoBGP requests the first n churn events of c
// amount to, derived by the pure core ahead of time: per event, the calls
// the executor makes for its one speaker effect. c churns policies only
// (in place): a SetPolicy is the neighbor leaving the custom neighbor set
// if it was a member, the removal of its installed objects, its new
// defined sets, policies and assignments, joining the set again if its new
// policy is excluded from the shared export policy, then a soft reset; a
// DeletePolicy (of a configured neighbor) is joining the set if it was
// not a member, the removal of its objects, then a soft reset.
func churnRequests(b *testing.B, c *clustergen.Cluster, n int) [][]floorCall {
	s := reducer.FromScratch(c.Local, state.Options{}, c.Objects())
	out := make([][]floorCall, 0, n)
	for i := 0; i < n; i++ {
		next := reducer.Reduce(s, c.Churn(i).Action)
		speaker, _, _ := effects.Group(effects.Diff(s, next))
		if len(speaker) != 1 {
			b.Fatalf("churn event %d: %d speaker effects, want 1", i, len(speaker))
		}
		switch e := speaker[0].(type) {
		case effects.SetPolicy:
			// Every neighbor has a policy (Calico's export rules): the
			// executor removes the installed one before adding the new.
			var calls []floorCall
			if cur, ok := s.Out.Neighbors.Get(state.AddrKey(e.Addr)); ok && !cur.Policy.IsZero() {
				if gobgp.Excluded(cur.Policy) {
					calls = append(calls, leaveCall(e.Addr))
				}
				calls = append(calls, removePolicyCalls(b, e.Addr, cur.Policy)...)
			}
			out = append(out, append(calls, addPolicyCalls(b, e.Addr, e.Policy)...))
		case effects.DeletePolicy:
			cur, _ := s.Out.Neighbors.Get(state.AddrKey(e.Addr))
			var calls []floorCall
			if !gobgp.Excluded(cur.Policy) {
				calls = append(calls, joinCall(e.Addr))
			}
			out = append(out, append(calls, deletePolicyCalls(b, e.Addr, cur.Policy)...))
		default:
			b.Fatalf("churn event %d: %s, want a policy change", i, speaker[0])
		}
		s = next
	}
	return out
}

func policyCalls(b *testing.B, addr netip.Addr, p state.Policy) gobgp.Calls {
	calls, err := gobgp.CallsFor(&state.Neighbor{Address: addr, Policy: p, Families: []string{"ipv4-unicast"}})
	must(b, err)
	return calls
}

func addPolicyCalls(b *testing.B, addr netip.Addr, p state.Policy) []floorCall {
	c := policyCalls(b, addr, p)
	var out []floorCall
	for _, r := range c.Sets {
		out = append(out, func(ctx context.Context, s *server.BgpServer) error { return s.AddDefinedSet(ctx, r) })
	}
	for _, r := range c.Policies {
		out = append(out, func(ctx context.Context, s *server.BgpServer) error { return s.AddPolicy(ctx, r) })
	}
	for _, r := range c.Assignments {
		out = append(out, func(ctx context.Context, s *server.BgpServer) error { return s.AddPolicyAssignment(ctx, r) })
	}
	if c.Member != nil {
		out = append(out, joinCall(addr))
	}
	return append(out, softReset(addr))
}

func joinCall(addr netip.Addr) floorCall {
	req := gobgp.JoinRequest(addr)
	return func(ctx context.Context, s *server.BgpServer) error { return s.AddDefinedSet(ctx, req) }
}

func leaveCall(addr netip.Addr) floorCall {
	req := gobgp.LeaveRequest(addr)
	return func(ctx context.Context, s *server.BgpServer) error { return s.DeleteDefinedSet(ctx, req) }
}

func deletePolicyCalls(b *testing.B, addr netip.Addr, p state.Policy) []floorCall {
	return append(removePolicyCalls(b, addr, p), softReset(addr))
}

// removePolicyCalls delete a neighbor's policy objects: assignments, then
// policies, then their sets.
func removePolicyCalls(b *testing.B, addr netip.Addr, p state.Policy) []floorCall {
	c := policyCalls(b, addr, p)
	var out []floorCall
	for _, r := range c.Assignments {
		req := &api.DeletePolicyAssignmentRequest{Assignment: r.Assignment}
		out = append(out, func(ctx context.Context, s *server.BgpServer) error { return s.DeletePolicyAssignment(ctx, req) })
	}
	for _, r := range c.Policies {
		req := &api.DeletePolicyRequest{Policy: &api.Policy{Name: r.Policy.Name}, All: true}
		out = append(out, func(ctx context.Context, s *server.BgpServer) error { return s.DeletePolicy(ctx, req) })
	}
	for _, r := range c.Sets {
		req := &api.DeleteDefinedSetRequest{DefinedSet: &api.DefinedSet{DefinedType: r.DefinedSet.DefinedType, Name: r.DefinedSet.Name}, All: true}
		out = append(out, func(ctx context.Context, s *server.BgpServer) error { return s.DeleteDefinedSet(ctx, req) })
	}
	return out
}

func softReset(addr netip.Addr) floorCall {
	req := &api.ResetPeerRequest{Address: addr.String(), Soft: true, Direction: api.ResetPeerRequest_DIRECTION_BOTH}
	return func(ctx context.Context, s *server.BgpServer) error { return s.ResetPeer(ctx, req) }
}

// floorChurn issues each event's requests one after the other and
// measures each event.
func floorChurn(b *testing.B, bgp *server.BgpServer, reqs [][]floorCall) churnResult {
	ctx := context.Background()
	lat := make([]time.Duration, 0, len(reqs))
	runtime.GC()
	t0 := time.Now()
	for _, calls := range reqs {
		t := time.Now()
		for _, call := range calls {
			must(b, call(ctx, bgp))
		}
		lat = append(lat, time.Since(t))
	}
	el := time.Since(t0)
	slices.Sort(lat)
	return churnResult{rate: float64(len(reqs)) / el.Seconds(), p50: percentile(lat, 0.50), p99: percentile(lat, 0.99)}
}
