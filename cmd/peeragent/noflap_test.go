package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/effects/gobgp"
	"github.com/peeragent/peeragent/internal/birdtest"
	"github.com/peeragent/peeragent/internal/frrtest"
	"github.com/peeragent/peeragent/state"
)

// The no-flap test (issue 5, item 4): the real Loop, with the real GoBGP
// executor on 127.0.0.1, has Established sessions with a real BIRD 2
// (127.0.0.40) and a real FRR bgpd (127.0.0.41), both with TCP-MD5
// passwords from Secrets. 1,000 changes that do not concern node-a's two
// neighbors go through Dispatch; the peers' own counters (BIRD's log and
// `show protocols all`, FRR's `show bgp neighbors json`) show no reset,
// and a counting wrapper round the executor shows no call. A password
// rotation of the FRR peer then proves the counters do see a reset.

const (
	noflapOurAddr  = "127.0.0.1"
	noflapBirdAddr = "127.0.0.40"
	noflapFRRAddr  = "127.0.0.41"
	noflapOurAS    = 64512 // Calico's default: no BGPConfiguration sets one
	noflapBirdAS   = 65040
	noflapFRRAS    = 65041
	noflapProto    = "peeragent" // BIRD's protocol name for the session with us
	noflapKey      = "password"
	noflapBirdSec  = "noflap-bird-md5"
	noflapFRRSec   = "noflap-frr-md5"
	noflapBirdPw   = "noflap-bird-key-one"
	noflapFRRPw1   = "noflap-frr-key-one"
	noflapFRRPw2   = "noflap-frr-key-two"
	noflapChanges  = 1000
	noflapQuiet    = 3 * time.Second
	noflapBudget   = 55 * time.Second // the whole test, peers' start included
	noflapSelector = "noflap-role == 'speaker'"
)

// noflapOthers are the other nodes: no mesh, so nobody dials them.
var noflapOthers = []string{"node-b", "node-c", "node-d"}

func TestNoFlapsAgainstBirdAndFRR(t *testing.T) {
	if testing.Short() {
		t.Skip("real BIRD and FRR peers: not in -short")
	}
	birdtest.Require(t)
	frrtest.Require(t)
	noflapRequireAddrs(t, noflapOurAddr, noflapBirdAddr, noflapFRRAddr)
	ctx, cancelAll := context.WithTimeout(context.Background(), noflapBudget)
	defer cancelAll()
	start := time.Now()

	// The peers, configured to peer with node-a on our listen port.
	ourPort := noflapFreePort(t, noflapOurAddr)
	birdAddr, frrAddr := netip.MustParseAddr(noflapBirdAddr), netip.MustParseAddr(noflapFRRAddr)
	ourAddr := netip.MustParseAddr(noflapOurAddr)
	birdPort := birdtest.FreePort(t, birdAddr)
	frrPort := frrtest.FreePort(t, frrAddr)
	bird := birdtest.Start(t, birdtest.Config{Address: birdAddr, Port: birdPort, AS: noflapBirdAS,
		Neighbors: []birdtest.Neighbor{{Name: noflapProto, Address: ourAddr, Port: ourPort, AS: noflapOurAS, Password: noflapBirdPw}}})
	frrCfg := frrtest.Config{Address: frrAddr, Port: frrPort, AS: noflapFRRAS,
		Neighbors: []frrtest.Neighbor{{Name: "peeragent", Address: ourAddr, Port: ourPort, AS: noflapOurAS, Password: noflapFRRPw1}}}
	frr := frrtest.Start(t, frrCfg)

	// The agent: the real Loop and the real GoBGP executor, counted.
	cl := newNoflapCluster(ourPort, netip.AddrPortFrom(birdAddr, uint16(birdPort)), netip.AddrPortFrom(frrAddr, uint16(frrPort)))
	logs := &noflapLogBuf{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	bgp := gobgp.New(gobgp.Options{ListenAddresses: []string{noflapOurAddr}, Logger: log, GoBGPLevel: slog.LevelWarn})
	counter := &noflapCounter{inner: bgp}
	watcher := &noflapSecretWatcher{cluster: cl}
	seen := &noflapObserver{}
	l := NewLoop(LoopConfig{Initial: state.New("node-a", state.Options{}), Speaker: counter, Secrets: watcher,
		Log: log, Journal: 2 * noflapChanges, Observer: []func(state.Action){seen.observe}})
	watcher.dispatch = l.Dispatch
	runCtx, stop := context.WithCancel(context.Background())
	loopDone, watchDone := make(chan struct{}), make(chan error, 1)
	go func() { l.Run(runCtx); close(loopDone) }()
	go func() { watchDone <- bgp.WatchSessions(runCtx, l.Dispatch) }()
	t.Cleanup(func() { // before the peers' cleanups: registered after them
		stop()
		<-loopDone
		if err := <-watchDone; err != nil {
			t.Errorf("WatchSessions: %v", err)
		}
		if err := bgp.Close(); err != nil {
			t.Errorf("close the GoBGP executor: %v", err)
		}
		if t.Failed() {
			t.Logf("agent log:\n%s\nspeaker effects:\n%s", logs.String(), strings.Join(counter.strings(0), "\n"))
		}
	})
	for _, a := range cl.lists() {
		l.Dispatch(a)
	}

	// Established on all three views: our State, BIRD's, FRR's.
	noflapWaitEstablished(ctx, t, l, bird, frr, birdAddr, frrAddr)
	t.Logf("both sessions established on all three views %v after start", time.Since(start).Round(time.Millisecond))
	time.Sleep(time.Second) // let the start-up settle (collisions, first updates) before taking the baseline
	noflapWaitEstablished(ctx, t, l, bird, frr, birdAddr, frrAddr)
	birdBefore, err := bird.Protocol(noflapProto)
	if err != nil {
		t.Fatal(err)
	}
	birdN0 := bird.Establishments(noflapProto)
	frrBefore, err := frr.Neighbor(ourAddr)
	if err != nil {
		t.Fatal(err)
	}
	if !frrBefore.MD5 {
		t.Errorf("FRR's neighbor %s has no MD5 password: %s", ourAddr, frrBefore)
	}
	ourBefore := map[netip.Addr]state.Session{birdAddr: noflapSession(l, birdAddr), frrAddr: noflapSession(l, frrAddr)}
	for a, s := range ourBefore {
		if s.Applied == nil || s.Applied.Password.IsZero() {
			t.Errorf("our applied config for %s has no password", a)
		}
	}

	// 1,000 unrelated changes, as fast as Dispatch takes them.
	mark, seenMark := counter.mark(), seen.mark()
	watchesBefore := watcher.calls()
	rng := rand.New(rand.NewPCG(5, 4))
	mix := map[string]int{}
	steps0 := noflapSteps(t, l)
	t0 := time.Now()
	for i := 0; i < noflapChanges; i++ {
		kind, a := cl.churn(i, rng)
		mix[kind]++
		l.Dispatch(a)
		if i < noflapChanges/2 {
			// The first half one per loop step (each its own Reduce and
			// Diff); the second half in one burst, as a relist storm comes.
			seen.waitTotal(ctx, t, seenMark.total+i+1)
		}
	}
	noflapWait(ctx, t, "the marker (the last change) reduced", func() bool {
		n, ok := l.State().Inputs.Nodes.Get(noflapOthers[len(noflapOthers)-1])
		return ok && n.Spec.Labels["noflap-marker"] == "done"
	})
	drained := time.Since(t0)
	time.Sleep(noflapQuiet)

	effs := counter.since(mark)
	perAddr := noflapByAddr(effs)
	reduced := seen.since(seenMark)
	steps := noflapSteps(t, l) - steps0
	cl.checkInputs(t, l.State())
	if n := l.State().Out.Neighbors.Len(); n != 2 {
		t.Errorf("node-a has %d neighbors after the changes, want the 2 peers", n)
	}
	birdAfter, err := bird.Protocol(noflapProto)
	if err != nil {
		t.Fatal(err)
	}
	birdN1 := bird.Establishments(noflapProto)
	frrAfter, err := frr.Neighbor(ourAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("change mix: %s; %d loop steps (Reduce+Diff: %d changes one per step, %d in a burst); all reduced in %v, then %v of quiet",
		noflapMix(mix), steps, noflapChanges/2, noflapChanges-noflapChanges/2, drained.Round(time.Millisecond), noflapQuiet)
	t.Logf("%d unrelated changes: speaker calls %d (%s %d, %s %d); secret watch calls %d; actions reduced %d (%d session, %d results); "+
		"BIRD establishments %d→%d, same session %v (since %s → %s); FRR connectionsEstablished %d→%d, dropped %d→%d; "+
		"our flaps BIRD %d→%d, FRR %d→%d",
		noflapChanges, len(effs), noflapBirdAddr, perAddr[noflapBirdAddr], noflapFRRAddr, perAddr[noflapFRRAddr],
		watcher.calls()-watchesBefore, reduced.total, reduced.sessions, reduced.results,
		birdN0, birdN1, birdAfter.SameSessionAs(birdBefore), birdBefore.SinceText, birdAfter.SinceText,
		frrBefore.ConnectionsEstablished, frrAfter.ConnectionsEstablished, frrBefore.ConnectionsDropped, frrAfter.ConnectionsDropped,
		ourBefore[birdAddr].Flaps, noflapSession(l, birdAddr).Flaps, ourBefore[frrAddr].Flaps, noflapSession(l, frrAddr).Flaps)

	if perAddr[noflapBirdAddr] != 0 || perAddr[noflapFRRAddr] != 0 {
		t.Errorf("the executor was handed effects for the peers during the unrelated changes:\n%s", strings.Join(counter.strings(mark), "\n"))
	} else if len(effs) != 0 {
		t.Errorf("the executor was handed %d effects during the unrelated changes:\n%s", len(effs), strings.Join(counter.strings(mark), "\n"))
	}
	if n := watcher.calls() - watchesBefore; n != 0 {
		t.Errorf("%d secret watch calls during the unrelated changes", n)
	}
	if reduced.total != noflapChanges || reduced.sessions != 0 || reduced.results != 0 {
		t.Errorf("the loop reduced %d actions (%d session changes, %d results), want exactly the %d changes",
			reduced.total, reduced.sessions, reduced.results, noflapChanges)
	}
	if !birdAfter.SameSessionAs(birdBefore) || birdN1 != birdN0 {
		t.Errorf("BIRD's session was reset: before %s (%d establishments), after %s (%d)", birdBefore, birdN0, birdAfter, birdN1)
	}
	if !frrAfter.SameSessionAs(frrBefore) {
		t.Errorf("FRR's session was reset: before %s, after %s", frrBefore, frrAfter)
	}
	for _, a := range []netip.Addr{birdAddr, frrAddr} {
		if s := noflapSession(l, a); s.Phase != state.PhaseEstablished || s.BGP != "established" || s.Flaps != 0 || s.Gen != ourBefore[a].Gen {
			t.Errorf("our session with %s: phase %q bgp %q flaps %d gen %d (was gen %d), want established, no flap, same generation",
				a, s.Phase, s.BGP, s.Flaps, s.Gen, ourBefore[a].Gen)
		}
	}
	if t.Failed() {
		return
	}

	// Positive control: rotating the FRR peer's password is one session
	// reset, and FRR's counters (and ours) see exactly that one.
	mark = counter.mark()
	rot := time.Now()
	l.Dispatch(state.SecretUpserted{Secret: cl.setSecret(noflapFRRSec, noflapFRRPw2)}) // what the Secret watch delivers
	noflapWait(ctx, t, "the executor handed the rotation", func() bool { return noflapByAddr(counter.since(mark))[noflapFRRAddr] > 0 })
	frrCfg.Neighbors[0].Password = noflapFRRPw2
	if err := frr.Reconfigure(frrCfg); err != nil {
		t.Fatal(err)
	}
	frrRot, err := frr.WaitNeighbor(ctx, ourAddr, func(n frrtest.NeighborState) bool {
		return n.Established() && n.ConnectionsEstablished > frrAfter.ConnectionsEstablished
	})
	if err != nil {
		t.Fatalf("FRR never re-established after the rotation: %v", err)
	}
	noflapWait(ctx, t, "our FRR session established again", func() bool {
		s := noflapSession(l, frrAddr)
		return s.Phase == state.PhaseEstablished && s.BGP == "established" && s.Flaps > 0
	})
	reEstablished := time.Since(rot)
	time.Sleep(time.Second) // a second reset would show here
	frrFinal, err := frr.Neighbor(ourAddr)
	if err != nil {
		t.Fatal(err)
	}
	birdFinal, err := bird.Protocol(noflapProto)
	if err != nil {
		t.Fatal(err)
	}
	birdN2 := bird.Establishments(noflapProto)
	rotEffs := counter.since(mark)
	rotAddr := noflapByAddr(rotEffs)
	t.Logf("positive control, FRR password rotated: speaker calls %d (%s %d, %s %d) [%s]; "+
		"FRR connectionsEstablished %d→%d, dropped %d→%d (re-established in %v); BIRD establishments %d→%d, same session %v; "+
		"our flaps FRR %d, BIRD %d",
		len(rotEffs), noflapFRRAddr, rotAddr[noflapFRRAddr], noflapBirdAddr, rotAddr[noflapBirdAddr], strings.Join(counter.strings(mark), "; "),
		frrAfter.ConnectionsEstablished, frrFinal.ConnectionsEstablished, frrAfter.ConnectionsDropped, frrFinal.ConnectionsDropped,
		reEstablished.Round(time.Millisecond), birdN1, birdN2, birdFinal.SameSessionAs(birdBefore),
		noflapSession(l, frrAddr).Flaps, noflapSession(l, birdAddr).Flaps)

	if up, ok := noflapOnly(rotEffs).(effects.UpdatePeer); !ok || up.New.Address != frrAddr || !up.Reset {
		t.Errorf("rotation effects: %v, want exactly one session-reset update-peer for %s", counter.strings(mark), frrAddr)
	}
	if frrFinal.ConnectionsEstablished != frrAfter.ConnectionsEstablished+1 || !frrFinal.SameSessionAs(frrRot) {
		t.Errorf("FRR after the rotation: %s, want exactly one more establishment than %s", frrFinal, frrAfter)
	}
	if !birdFinal.SameSessionAs(birdBefore) || birdN2 != birdN0 {
		t.Errorf("BIRD's session moved with FRR's rotation: before %s (%d), after %s (%d)", birdBefore, birdN0, birdFinal, birdN2)
	}
	if s := noflapSession(l, frrAddr); s.Flaps != 1 || s.Applied == nil || s.Applied.Password.Reveal() != noflapFRRPw2 {
		t.Errorf("our FRR session after the rotation: phase %q flaps %d", s.Phase, s.Flaps)
	}
	if s := noflapSession(l, birdAddr); s.Phase != state.PhaseEstablished || s.Flaps != 0 {
		t.Errorf("our BIRD session after FRR's rotation: phase %q flaps %d", s.Phase, s.Flaps)
	}
	text := logs.String() + strings.Join(counter.strings(0), "\n")
	for _, pw := range []string{noflapBirdPw, noflapFRRPw1, noflapFRRPw2} {
		if strings.Contains(text, pw) {
			t.Errorf("a password reached the agent's log or the effects' text")
		}
	}
	t.Logf("whole test %v", time.Since(start).Round(time.Millisecond))
}

// noflapWaitEstablished waits until both sessions are established in our
// State, in BIRD's `show protocols` and in FRR's `show bgp neighbors`.
func noflapWaitEstablished(ctx context.Context, t *testing.T, l *Loop, bird *birdtest.Bird, frr *frrtest.FRR, birdAddr, frrAddr netip.Addr) {
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
	if _, err := bird.WaitEstablished(ctx, noflapProto); err != nil {
		t.Fatal(err)
	}
	if _, err := frr.WaitEstablished(ctx, netip.MustParseAddr(noflapOurAddr)); err != nil {
		t.Fatal(err)
	}
	if !ours() {
		t.Fatalf("the peers are Established, our State no longer: BIRD %+v, FRR %+v", noflapSession(l, birdAddr), noflapSession(l, frrAddr))
	}
}

func noflapSession(l *Loop, a netip.Addr) state.Session {
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
	case state.PeerApplied, state.PeerApplyFailed, state.ServerApplied, state.ServerApplyFailed, state.RouteApplied, state.RouteApplyFailed:
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

// noflapCluster is the test's API server: the objects as they stand. Every
// action carries fresh copies (a dispatched action belongs to the reducer).
type noflapCluster struct {
	mu      sync.Mutex
	nodes   map[string]state.Node
	peers   map[string]state.BGPPeer
	configs map[string]state.BGPConfiguration
	filters map[string]state.BGPFilter
	secrets map[string]state.Secret
}

func newNoflapCluster(listenPort int, bird, frr netip.AddrPort) *noflapCluster {
	meshOff := false
	c := &noflapCluster{
		nodes: map[string]state.Node{"node-a": {Name: "node-a", IPv4Address: noflapOurAddr + "/8",
			Labels: map[string]string{"noflap-role": "speaker", "rack": "r1"}}},
		peers: map[string]state.BGPPeer{
			// One peer by node name, one by a selector only node-a matches.
			"noflap-bird": {Name: "noflap-bird", Node: "node-a", PeerIP: bird.String(), ASNumber: noflapBirdAS,
				Password: &state.SecretKeyRef{Name: noflapBirdSec, Key: noflapKey}},
			"noflap-frr": {Name: "noflap-frr", NodeSelector: noflapSelector, PeerIP: frr.String(), ASNumber: noflapFRRAS,
				Password: &state.SecretKeyRef{Name: noflapFRRSec, Key: noflapKey}},
		},
		configs: map[string]state.BGPConfiguration{
			"default":     {Name: "default", NodeToNodeMeshEnabled: &meshOff},
			"node.node-a": {Name: "node.node-a", ListenPort: int32(listenPort)},
		},
		filters: map[string]state.BGPFilter{},
		secrets: map[string]state.Secret{},
	}
	for i, n := range noflapOthers {
		c.nodes[n] = state.Node{Name: n, IPv4Address: fmt.Sprintf("127.0.0.%d/8", 52+i),
			Labels: map[string]string{"noflap-role": "worker", "rack": "r2"}}
		c.configs["node."+n] = state.BGPConfiguration{Name: "node." + n, LogSeverityScreen: "Info"}
	}
	c.setSecret(noflapBirdSec, noflapBirdPw)
	c.setSecret(noflapFRRSec, noflapFRRPw1)
	return c
}

// setSecret stores a Secret and returns the copy its watch would deliver.
func (c *noflapCluster) setSecret(name, password string) state.Secret {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.secrets[name] = state.Secret{Name: name, Data: map[string]state.Password{noflapKey: state.NewPassword(password)}}
	return noflapCloneSecret(c.secrets[name])
}

func (c *noflapCluster) secret(name string) (state.Secret, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.secrets[name]
	return noflapCloneSecret(s), ok
}

// lists are the complete lists of the four synced kinds, as a (re)list
// delivers them.
func (c *noflapCluster) lists() []state.Action {
	c.mu.Lock()
	defer c.mu.Unlock()
	return []state.Action{c.relist(state.KindNode), c.relist(state.KindBGPConfiguration),
		c.relist(state.KindBGPFilter), c.relist(state.KindBGPPeer)}
}

// relist is one kind's complete list, identical to what the loop has.
func (c *noflapCluster) relist(k state.Kind) state.SourceSynced {
	a := state.SourceSynced{Kind: k}
	switch k {
	case state.KindNode:
		for _, n := range noflapSorted(c.nodes) {
			a.Nodes = append(a.Nodes, noflapCloneNode(n))
		}
	case state.KindBGPPeer:
		for _, p := range noflapSorted(c.peers) {
			a.Peers = append(a.Peers, noflapClonePeer(p))
		}
	case state.KindBGPConfiguration:
		for _, cfg := range noflapSorted(c.configs) {
			a.Configs = append(a.Configs, noflapCloneConfig(cfg))
		}
	case state.KindBGPFilter:
		for _, f := range noflapSorted(c.filters) {
			a.Filters = append(a.Filters, noflapCloneFilter(f))
		}
	}
	return a
}

// churn makes change i (of noflapChanges) in the cluster and returns its
// kind and the action a watch would deliver for it. None concerns node-a's
// two neighbors. The last one is the marker: a label of the last other node.
func (c *noflapCluster) churn(i int, r *rand.Rand) (string, state.Action) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i == noflapChanges-1 {
		n := noflapCloneNode(c.nodes[noflapOthers[len(noflapOthers)-1]])
		n.Labels["noflap-marker"] = "done"
		c.nodes[n.Name] = n
		return "node-labels", state.NodeUpserted{Node: noflapCloneNode(n)}
	}
	switch i % 7 {
	case 0: // labels of another node, never the one the FRR peer selects
		n := noflapCloneNode(c.nodes[noflapOthers[r.IntN(len(noflapOthers))]])
		n.Labels["noflap-churn"] = strconv.Itoa(i)
		n.Labels["noflap-role"] = []string{"worker", "edge", "ingress"}[r.IntN(3)]
		if r.IntN(2) == 0 {
			n.Labels["rack"] = []string{"r1", "r2", "r3"}[r.IntN(3)]
		}
		c.nodes[n.Name] = n
		return "node-labels", state.NodeUpserted{Node: noflapCloneNode(n)}
	case 1: // Secrets nobody uses: created, rotated, deleted (delivered as a relist would)
		name := fmt.Sprintf("noflap-unused-%d", r.IntN(4))
		if _, ok := c.secrets[name]; ok && r.IntN(3) == 0 {
			delete(c.secrets, name)
			return "unused-secrets", state.SecretDeleted{Name: name}
		}
		c.secrets[name] = state.Secret{Name: name, Data: map[string]state.Password{noflapKey: state.NewPassword(fmt.Sprintf("unused-%d", i))}}
		return "unused-secrets", state.SecretUpserted{Secret: noflapCloneSecret(c.secrets[name])}
	case 2: // identical relists: each synced kind, and the used Secrets again
		switch (i / 7) % 6 {
		case 0:
			return "identical-relists", c.relist(state.KindNode)
		case 1:
			return "identical-relists", c.relist(state.KindBGPPeer)
		case 2:
			return "identical-relists", c.relist(state.KindBGPConfiguration)
		case 3:
			return "identical-relists", c.relist(state.KindBGPFilter)
		case 4:
			return "identical-relists", state.SecretUpserted{Secret: noflapCloneSecret(c.secrets[noflapBirdSec])}
		default:
			return "identical-relists", state.SecretUpserted{Secret: noflapCloneSecret(c.secrets[noflapFRRSec])}
		}
	case 3: // other peers added and removed: for node-c, or by a selector node-a does not match
		k := r.IntN(4)
		name := fmt.Sprintf("noflap-other-%d", k)
		if _, ok := c.peers[name]; ok {
			delete(c.peers, name)
			return "other-peers", state.PeerDeleted{Name: name}
		}
		p := state.BGPPeer{Name: name, Node: "node-c", PeerIP: fmt.Sprintf("127.0.0.%d", 90+k), ASNumber: int64(65100 + k)}
		if k%2 == 1 {
			p.Node, p.NodeSelector = "", "noflap-role == 'edge'"
		}
		c.peers[name] = p
		return "other-peers", state.PeerUpserted{Peer: noflapClonePeer(p)}
	case 4: // status-only updates: the node unchanged, node-a included
		names := append([]string{"node-a"}, noflapOthers...)
		return "status-only", state.NodeUpserted{Node: noflapCloneNode(c.nodes[names[r.IntN(len(names))]])}
	case 5: // BGPFilters nobody uses
		name := fmt.Sprintf("noflap-filter-%d", r.IntN(3))
		if _, ok := c.filters[name]; ok && r.IntN(3) == 0 {
			delete(c.filters, name)
			return "unused-filters", state.FilterDeleted{Name: name}
		}
		f := state.BGPFilter{Name: name, ImportV4: []state.FilterRule{{CIDR: fmt.Sprintf("10.%d.0.0/16", i%250),
			MatchOperator: "In", Action: []string{"Accept", "Reject"}[r.IntN(2)]}}}
		c.filters[name] = f
		return "unused-filters", state.FilterUpserted{Filter: noflapCloneFilter(f)}
	default: // another node's log level
		levels := []string{"Info", "Debug", "Warning", "Error"}
		cfg := noflapCloneConfig(c.configs["node."+noflapOthers[r.IntN(len(noflapOthers))]])
		cfg.LogSeverityScreen = levels[(slices.Index(levels, cfg.LogSeverityScreen)+1)%len(levels)]
		c.configs[cfg.Name] = cfg
		return "other-node-log-level", state.ConfigUpserted{Config: noflapCloneConfig(cfg)}
	}
}

// checkInputs: the loop's inputs are the cluster's objects, all valid, and
// nothing is a problem, so every change was a real change (or a real
// identical relist) that the reducer took, not input it set aside.
func (c *noflapCluster) checkInputs(t *testing.T, s state.State) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	noflapSameInputs(t, "nodes", c.nodes, s.Inputs.Nodes.Keys(), func(k string) (any, bool) {
		e, ok := s.Inputs.Nodes.Get(k)
		return noflapSpec(ok, func() any { return *e.Spec }), ok
	})
	noflapSameInputs(t, "peers", c.peers, s.Inputs.Peers.Keys(), func(k string) (any, bool) {
		e, ok := s.Inputs.Peers.Get(k)
		if ok && !e.Valid {
			t.Errorf("peer %s is invalid", k)
		}
		return noflapSpec(ok, func() any { return *e.Spec }), ok
	})
	noflapSameInputs(t, "configs", c.configs, s.Inputs.Configs.Keys(), func(k string) (any, bool) {
		e, ok := s.Inputs.Configs.Get(k)
		return noflapSpec(ok, func() any { return *e }), ok
	})
	noflapSameInputs(t, "filters", c.filters, s.Inputs.Filters.Keys(), func(k string) (any, bool) {
		e, ok := s.Inputs.Filters.Get(k)
		if ok && e.Invalid != "" {
			t.Errorf("filter %s is invalid: %s", k, e.Invalid)
		}
		return noflapSpec(ok, func() any { return *e.Spec }), ok
	})
	noflapSameInputs(t, "secrets", c.secrets, s.Inputs.Secrets.Keys(), func(k string) (any, bool) {
		e, ok := s.Inputs.Secrets.Get(k)
		return noflapSpec(ok, func() any { return *e }), ok
	})
	if probs := s.AllProblems(); len(probs) != 0 {
		t.Errorf("the State has problems: %v", probs)
	}
}

func noflapSpec(ok bool, spec func() any) any {
	if !ok {
		return nil
	}
	return spec()
}

func noflapSameInputs[V any](t *testing.T, what string, want map[string]V, have []string, get func(string) (any, bool)) {
	t.Helper()
	if keys := slices.Sorted(maps.Keys(want)); !slices.Equal(keys, slices.Sorted(slices.Values(have))) {
		t.Errorf("the loop's %s are %v, the cluster's %v", what, have, keys)
		return
	}
	for k, v := range want {
		if got, _ := get(k); !reflect.DeepEqual(got, any(v)) {
			t.Errorf("the loop's %s %s is %+v, the cluster's %+v", what, k, got, v)
		}
	}
}

// noflapSteps is how many batches the loop has reduced and diffed.
func noflapSteps(t *testing.T, l *Loop) uint64 {
	t.Helper()
	mfs, err := l.metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "peeragent_diff_seconds" && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatal("no peeragent_diff_seconds in the loop's metrics")
	return 0
}

func noflapSorted[V any](m map[string]V) []V {
	keys := slices.Sorted(maps.Keys(m))
	out := make([]V, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

func noflapCloneNode(n state.Node) state.Node {
	n.Labels = maps.Clone(n.Labels)
	return n
}

func noflapClonePeer(p state.BGPPeer) state.BGPPeer {
	if p.Password != nil {
		ref := *p.Password
		p.Password = &ref
	}
	if p.MaxRestartTime != nil {
		d := *p.MaxRestartTime
		p.MaxRestartTime = &d
	}
	p.Filters = slices.Clone(p.Filters)
	return p
}

func noflapCloneConfig(c state.BGPConfiguration) state.BGPConfiguration {
	if c.NodeToNodeMeshEnabled != nil {
		b := *c.NodeToNodeMeshEnabled
		c.NodeToNodeMeshEnabled = &b
	}
	if c.NodeMeshPassword != nil {
		ref := *c.NodeMeshPassword
		c.NodeMeshPassword = &ref
	}
	if c.NodeMeshMaxRestartTime != nil {
		d := *c.NodeMeshMaxRestartTime
		c.NodeMeshMaxRestartTime = &d
	}
	return c
}

func noflapCloneFilter(f state.BGPFilter) state.BGPFilter {
	f.ExportV4, f.ImportV4 = slices.Clone(f.ExportV4), slices.Clone(f.ImportV4)
	f.ExportV6, f.ImportV6 = slices.Clone(f.ExportV6), slices.Clone(f.ImportV6)
	return f
}

func noflapCloneSecret(s state.Secret) state.Secret {
	s.Data = maps.Clone(s.Data)
	return s
}

func noflapMix(mix map[string]int) string {
	keys := make([]string, 0, len(mix))
	for k := range mix {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, mix[k])
	}
	return strings.Join(parts, ", ")
}
