package e2e

import (
	"context"
	"net/netip"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/clustergen"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// churnResult is what one churn phase measured: events per second, from
// the first dispatch to the last call's return, and the latency
// percentiles from dispatch to the return of the call carrying the event.
type churnResult struct {
	rate     float64
	p50, p99 time.Duration
}

// dispatch sends the cluster's next churn event and awaits its call. An
// event for an address whose previous event still awaits its call waits
// until that call returns: two changes in flight for one neighbor could
// be coalesced by the loop (a label flipped twice is no change), which is
// right for the agent but leaves nothing to time.
func (r *rig) dispatch(c *clustergen.Cluster, next *int) {
	ev := c.Churn(*next)
	*next++
	for r.speaker.isPending(ev.Addr) {
		time.Sleep(50 * time.Microsecond)
	}
	r.speaker.mark(ev.Addr, time.Now())
	r.loop.Dispatch(ev.Action)
}

// steady offers n churn events at rate per second, on schedule: a late
// dispatcher catches up, so the offered rate holds on average unless the
// agent is saturated.
func steady(b *testing.B, r *rig, c *clustergen.Cluster, next *int, rate float64, n int) churnResult {
	interval := time.Duration(float64(time.Second) / rate)
	r.speaker.takeLatencies()
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if wait := time.Until(t0.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		r.dispatch(c, next)
	}
	return r.finish(b, n, t0)
}

// flood sends n churn events as fast as the agent takes them, with at
// most window of them awaiting their call at any time.
func flood(b *testing.B, r *rig, c *clustergen.Cluster, next *int, n, window int) churnResult {
	r.speaker.takeLatencies()
	t0 := time.Now()
	for i := 0; i < n; i++ {
		for {
			if _, _, done := r.speaker.counts(); i-done < window {
				break
			}
			time.Sleep(500 * time.Microsecond)
		}
		r.dispatch(c, next)
	}
	return r.finish(b, n, t0)
}

// finish waits for the n events dispatched since t0 to have their calls.
func (r *rig) finish(b *testing.B, n int, t0 time.Time) churnResult {
	waitUntil(b, "churn calls", 5*time.Minute, time.Millisecond, func() bool {
		_, _, done := r.speaker.counts()
		return done >= n
	})
	if _, failed, _ := r.speaker.counts(); failed > 0 {
		b.Fatalf("%d speaker calls failed, first: %s", failed, r.speaker.firstErr)
	}
	lat, at := r.speaker.takeLatencies()
	slices.Sort(lat)
	return churnResult{rate: float64(n) / at.Sub(t0).Seconds(), p50: percentile(lat, 0.50), p99: percentile(lat, 0.99)}
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))]
}

// oldWay is the design peeragent replaces, minus its sleep: every event
// re-derives the State from the complete object lists (reducer.FromScratch)
// and diffs it in full against the previous one; the speaker's effects
// that change something run on ex. It returns events per second.
func oldWay(b *testing.B, ex effects.Executor, c *clustergen.Cluster, n int) float64 {
	ctx := context.Background()
	prev := reducer.FromScratch(c.Local, state.Options{}, c.Objects())
	runtime.GC()
	calls := 0
	t0 := time.Now()
	for i := 0; i < n; i++ {
		ev := c.Churn(i)
		c.Apply(ev.Action)
		next := reducer.FromScratch(c.Local, state.Options{}, c.Objects())
		speaker := changing(effects.Diff(prev, next))
		calls += len(speaker)
		for _, res := range ex.Execute(ctx, speaker) {
			if f, ok := res.(state.PeerApplyFailed); ok {
				b.Fatalf("old way: %s", f.Error)
			}
		}
		prev = next
	}
	el := time.Since(t0)
	if calls != n {
		b.Fatalf("old way: %d speaker calls for %d events", calls, n)
	}
	return float64(n) / el.Seconds()
}

// changing keeps the speaker's effects that change something. Two States
// derived from scratch number their generations afresh, so a change that
// steps one neighbor renumbers every later one, and Diff re-confirms each
// of those with an UpdatePeer of no change; the old way made no such call.
func changing(effs []effects.Effect) []effects.Effect {
	speaker, _, _ := effects.Group(effs)
	out := speaker[:0]
	for _, e := range speaker {
		if u, ok := e.(effects.UpdatePeer); ok && len(u.Changes) == 0 {
			continue
		}
		out = append(out, e)
	}
	return out
}

// instantRig is the agent over a speaker that confirms every effect at
// once: the agent's own cost, without GoBGP's.
func instantRig(b *testing.B, c *clustergen.Cluster) (*rig, int) {
	want := converged(c).Out.Neighbors.Len()
	r := startRig(c.Local, newTimedSpeaker(instantSpeaker{}))
	r.converge(b, c, want)
	r.settle(b, want)
	return r, want
}

// churnHeap runs the agent over the instant speaker (GoBGP's heap is not
// the agent's) through n churn events and returns the live heap before,
// halfway and after. The journal is filled with churn first, so that the
// initial lists leaving it do not pass for a saving.
func churnHeap(b *testing.B, c *clustergen.Cluster, n int) (before, mid, after uint64) {
	r, want := instantRig(b, c)
	defer r.close()
	next := 0
	paced(b, r, c, &next, 2000)
	r.settle(b, want)
	before = heapAlloc()
	paced(b, r, c, &next, n/2)
	r.settle(b, want)
	mid = heapAlloc()
	paced(b, r, c, &next, n-n/2)
	r.settle(b, want)
	after = heapAlloc()
	return before, mid, after
}

// paced sends n churn events in bursts of 250, each burst once the
// previous one has had its calls.
func paced(b *testing.B, r *rig, c *clustergen.Cluster, next *int, n int) {
	for sent := 0; sent < n; {
		burst := min(250, n-sent)
		r.speaker.takeLatencies()
		for range burst {
			r.dispatch(c, next)
		}
		sent += burst
		r.finish(b, burst, time.Now())
	}
}

// instantSpeaker confirms every speaker effect at once.
type instantSpeaker struct{}

func (instantSpeaker) Execute(_ context.Context, effs []effects.Effect) []state.Action {
	var out []state.Action
	var last netip.Addr
	var lastGen uint64
	for _, e := range effs {
		if srv, ok := e.(effects.StartServer); ok {
			out = append(out, state.ServerApplied{Server: srv.Server})
		}
		addr, gen, ok := speakerGen(e)
		if !ok || (addr == last && gen == lastGen) {
			continue
		}
		last, lastGen = addr, gen
		out = append(out, state.PeerApplied{Address: addr, Gen: gen})
	}
	return out
}

func speakerGen(e effects.Effect) (netip.Addr, uint64, bool) {
	r := e.Ref()
	return r.Addr, r.Gen, r.Kind.Peer()
}
