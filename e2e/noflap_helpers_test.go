package e2e

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/bird"
	"github.com/peeragent/peeragent/internal/testrig/daemon"
	"github.com/peeragent/peeragent/internal/testrig/frr"
	"github.com/peeragent/peeragent/state"
)

// noflapView is what the two peers say of their session with the agent.
type noflapView struct {
	bird  bird.ProtocolState // BIRD's protocol noflapProto
	birdN int                // how many times it was established since BIRD started
	frr   frr.NeighborState  // FRR's neighbor, the agent's address
}

// noflapLook reads both peers' view of their session with the agent at
// ourAddr.
func noflapLook(t *testing.T, birdPeer *bird.Bird, frrPeer *frr.FRR, ourAddr netip.Addr) noflapView {
	t.Helper()
	var v noflapView
	var err error
	if v.bird, err = birdPeer.Protocol(noflapProto); err != nil {
		t.Fatal(err)
	}
	v.birdN = birdPeer.Establishments(noflapProto)
	if v.frr, err = frrPeer.Neighbor(ourAddr); err != nil {
		t.Fatal(err)
	}
	return v
}

// noflapWaitEstablished waits until both sessions are established in our
// State, in BIRD's `show protocols` and in FRR's `show bgp neighbors`.
func noflapWaitEstablished(ctx context.Context, t *testing.T, l *agent.Loop, birdPeer *bird.Bird, frrPeer *frr.FRR, birdAddr, frrAddr netip.Addr) {
	t.Helper()
	ours := func() bool {
		for _, a := range []netip.Addr{birdAddr, frrAddr} {
			if s := noflapSession(l, a); s.Phase != state.PhaseEstablished || s.BGP != "established" {
				return false
			}
		}
		return true
	}
	noflapWait(ctx, t, "both sessions established in our State", ours)
	if _, err := birdPeer.WaitEstablished(ctx, noflapProto); err != nil {
		t.Fatal(err)
	}
	if _, err := frrPeer.WaitEstablished(ctx, netip.MustParseAddr(noflapOurAddr)); err != nil {
		t.Fatal(err)
	}
	if !ours() {
		t.Fatalf("the peers are Established, our State no longer: BIRD %+v, FRR %+v", noflapSession(l, birdAddr), noflapSession(l, frrAddr))
	}
}

func noflapSession(l *agent.Loop, a netip.Addr) state.Session {
	if s, ok := l.State().Out.Sessions.Get(state.AddrKey(a)); ok {
		return *s
	}
	return state.Session{}
}

func noflapWait(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !poll(ctx, 20*time.Millisecond, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// noflapAddrs are the loopback addresses the no-flap test binds.
var noflapAddrs = daemon.Dependency{What: "loopback address", Tests: "no-flap tests"}

// noflapRequireAddrs skips the test loudly when the loopback addresses
// cannot be bound, and fails it under CI=true.
func noflapRequireAddrs(t *testing.T, addrs ...string) {
	t.Helper()
	noflapAddrs.RequireBind(t, addrs...)
}

func noflapByAddr(effs []effects.Effect) map[string]int {
	out := map[string]int{}
	for _, e := range effs {
		k := ""
		if a := e.Address(); a.IsValid() {
			k = a.String()
		}
		out[k]++
	}
	return out
}

// noflapOnly is the single effect of effs, or nil.
func noflapOnly(effs []effects.Effect) effects.Effect {
	if len(effs) != 1 {
		return nil
	}
	return effs[0]
}

// noflapReduced counts the actions the loop reduced (from its journal):
// in all, the session changes, and the results of effects.
type noflapReduced struct{ total, sessions, results int }

func noflapCount(t testing.TB, reduced *tally) noflapReduced {
	counts, total := reduced.read(t)
	r := noflapReduced{total: total, sessions: counts["sessionStateChanged"]}
	for _, name := range []string{"peerApplied", "peerApplyFailed", "serverApplied", "serverApplyFailed",
		"tableRouteApplied", "tableRouteApplyFailed"} {
		r.results += counts[name]
	}
	return r
}

func (r noflapReduced) since(m noflapReduced) noflapReduced {
	return noflapReduced{r.total - m.total, r.sessions - m.sessions, r.results - m.results}
}

// noflapSecretWatcher plays the per-name Secret watch: a watch started
// delivers the Secret from the test's cluster (or its absence).
type noflapSecretWatcher struct {
	cluster  *noflapCluster
	dispatch func(state.Action)
	mu       sync.Mutex
	n        int
}

func (w *noflapSecretWatcher) Watch(name string) {
	w.mu.Lock()
	w.n++
	w.mu.Unlock()
	if sec, ok := w.cluster.secret(name); ok {
		w.dispatch(state.SecretUpserted{Secret: sec})
	} else {
		w.dispatch(state.SecretDeleted{Name: name})
	}
}

func (w *noflapSecretWatcher) Unwatch(string) {
	w.mu.Lock()
	w.n++
	w.mu.Unlock()
}

func (w *noflapSecretWatcher) calls() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}
