package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/bird"
	"github.com/peeragent/peeragent/internal/testrig/frr"
	"github.com/peeragent/peeragent/state"
)

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
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// noflapRequireAddrs skips the test loudly when the loopback addresses
// cannot be bound, and fails it under CI=true.
func noflapRequireAddrs(t *testing.T, addrs ...string) {
	t.Helper()
	for _, a := range addrs {
		ln, err := net.Listen("tcp4", net.JoinHostPort(a, "0"))
		if err != nil {
			msg := fmt.Sprintf("SKIPPING NO-FLAP TEST: cannot bind %s (%v); it needs 127.0.0.0/8 on lo", a, err)
			if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
		ln.Close()
	}
}

func noflapFreePort(t *testing.T, addr string) int {
	t.Helper()
	ln, err := net.Listen("tcp4", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// noflapCounter counts every effect handed to the speaker executor.
type noflapCounter struct {
	inner effects.Executor
	mu    sync.Mutex
	seen  []effects.Effect
}

func (c *noflapCounter) Execute(ctx context.Context, effs []effects.Effect) []state.Action {
	c.mu.Lock()
	c.seen = append(c.seen, effs...)
	c.mu.Unlock()
	return c.inner.Execute(ctx, effs)
}

func (c *noflapCounter) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

func (c *noflapCounter) since(m int) []effects.Effect {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seen[m:])
}

func (c *noflapCounter) strings(m int) []string {
	var out []string
	for _, e := range c.since(m) {
		out = append(out, e.String())
	}
	return out
}

// noflapByAddr counts effects by neighbor address ("" for server effects).
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

// noflapObserver counts the actions the loop reduces.
type noflapObserver struct {
	mu                       sync.Mutex
	total, sessions, results int
	changed                  chan struct{} // closed and replaced on every action
}

// waitTotal waits until the loop has reduced n actions in all.
func (o *noflapObserver) waitTotal(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	for {
		o.mu.Lock()
		total, ch := o.total, o.changed
		if ch == nil {
			ch = make(chan struct{})
			o.changed = ch
		}
		o.mu.Unlock()
		if total >= n {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for the loop to reduce %d actions (has %d)", n, total)
		}
	}
}

type noflapSeen struct{ total, sessions, results int }

func (o *noflapObserver) observe(a state.Action) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.total++
	if o.changed != nil {
		close(o.changed)
		o.changed = nil
	}
	switch a.(type) {
	case state.SessionStateChanged:
		o.sessions++
	case state.PeerApplied, state.PeerApplyFailed, state.ServerApplied, state.ServerApplyFailed, state.TableRouteApplied, state.TableRouteApplyFailed:
		o.results++
	}
}

func (o *noflapObserver) mark() noflapSeen {
	o.mu.Lock()
	defer o.mu.Unlock()
	return noflapSeen{o.total, o.sessions, o.results}
}

func (o *noflapObserver) since(m noflapSeen) noflapSeen {
	n := o.mark()
	return noflapSeen{n.total - m.total, n.sessions - m.sessions, n.results - m.results}
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

// noflapLogBuf collects the agent's logs: GoBGP's goroutines outlive the
// test, so they never go to t.Log directly.
type noflapLogBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *noflapLogBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *noflapLogBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
