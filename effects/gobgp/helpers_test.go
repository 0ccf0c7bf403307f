package gobgp

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/daemon"
	"github.com/peeragent/peeragent/internal/testrig/logbuf"
	"github.com/peeragent/peeragent/state"
)

// loopback is the whole 127.0.0.0/8 on lo, which the real speaker tests
// need: they fail without it under CI=true, where they must run.
var loopback = daemon.Dependency{What: "loopback address", Tests: "real-speaker tests"}

// requireLoopback skips the test, loudly, when the extra loopback
// addresses cannot be bound (fails it under CI=true).
func requireLoopback(t *testing.T, addrs ...string) {
	t.Helper()
	loopback.RequireBind(t, addrs...)
}

// freePort returns a TCP port that is free on addr now. The speaker binds
// it a moment later; on loopback nothing else races for it.
func freePort(t *testing.T, addr string) uint16 {
	t.Helper()
	l, err := net.Listen("tcp4", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatalf("free port on %s: %v", addr, err)
	}
	defer l.Close()
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

// withoutTimes zeroes the At of each result (a PeerApplied, PathApplied,
// ServerApplyFailed...), which differs between runs.
func withoutTimes(as []state.Action) []state.Action {
	out := make([]state.Action, len(as))
	for i, a := range as {
		v := reflect.New(reflect.TypeOf(a)).Elem()
		v.Set(reflect.ValueOf(a))
		if v.Kind() == reflect.Struct {
			if at := v.FieldByName("At"); at.IsValid() && at.Type() == reflect.TypeFor[time.Time]() {
				at.SetZero()
			}
		}
		out[i] = v.Interface().(state.Action)
	}
	return out
}

// logBuf collects a test's logs. GoBGP's goroutines outlive the test, so
// logs go to a buffer (printed when the test fails), never to t.Log.
type logBuf = logbuf.Buffer

// speaker is one executor under test, with its logs and session events.
type speaker struct {
	*Executor
	addr   string
	port   uint16
	logs   *logBuf
	events *recorder
}

// newSpeaker makes an executor listening on addr (port chosen free) and
// watches its sessions until the test ends.
func newSpeaker(t *testing.T, addr string) *speaker {
	t.Helper()
	return newSpeakerOn(t, addr, addr)
}

// newSpeakerOn is newSpeaker listening on the addresses listen.
func newSpeakerOn(t *testing.T, addr string, listen ...string) *speaker {
	t.Helper()
	logs := &logBuf{}
	lg := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sp := &speaker{
		Executor: New(Options{ListenAddresses: listen, Logger: lg, GoBGPLevel: slog.LevelInfo}),
		addr:     addr, port: freePort(t, addr), logs: logs, events: newRecorder(),
	}
	t.Cleanup(func() { // after the watch's cleanup
		if err := sp.Close(); err != nil {
			t.Errorf("close %s: %v", addr, err)
		}
		if t.Failed() {
			t.Logf("logs of %s:\n%s", addr, logs.String())
		}
	})
	watchFor(t, "WatchSessions", func(ctx context.Context) error { return sp.WatchSessions(ctx, sp.events.add) })
	return sp
}

// watchFor runs watch until the test ends: its cleanup cancels the
// watch's context and waits for it to return.
func watchFor(t *testing.T, what string, watch func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- watch(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: %v", what, err)
		}
	})
}

func (sp *speaker) server(asn uint32) state.Server {
	return state.Server{ASN: asn, RouterID: netip.MustParseAddr(sp.addr), ListenPort: sp.port}
}

// neighborOf is how sp sees remote, in Calico's defaults: graceful
// restart 120 s, unicast of the family, eBGP multihop 255 between ASes.
func neighborOf(sp, remote *speaker, localAS, peerAS uint32) *state.Neighbor {
	n := &state.Neighbor{
		Address: netip.MustParseAddr(remote.addr), Port: remote.port,
		PeerASN: peerAS, LocalASN: localAS, Origin: "test",
		SourceAddress:          netip.MustParseAddr(sp.addr),
		GracefulRestartSeconds: 120, Families: []string{"ipv4-unicast"},
	}
	if localAS != peerAS {
		n.EBGPMultihopTTL = 255
	}
	return n
}

// three are speakers a (127.0.0.1, AS 64512), b (127.0.0.2, AS 64513)
// and c (127.0.0.3, AS 64514), their servers started (GoBGP's StartBgp
// writes package globals, table.UseMultiplePaths and SelectionOptions,
// that a running speaker's FSM reads: every speaker starts before any has
// a peer), and the neighbors a and b, a and c configure for each other:
// a's passive.
type three struct {
	a, b, c        *speaker
	ab, ba, ac, ca *state.Neighbor
}

func startThree(t *testing.T) *three {
	t.Helper()
	requireLoopback(t, "127.0.0.2", "127.0.0.3")
	s := &three{a: newSpeaker(t, "127.0.0.1"), b: newSpeaker(t, "127.0.0.2"), c: newSpeaker(t, "127.0.0.3")}
	s.ab, s.ba = neighborOf(s.a, s.b, 64512, 64513), neighborOf(s.b, s.a, 64513, 64512)
	s.ac, s.ca = neighborOf(s.a, s.c, 64512, 64514), neighborOf(s.c, s.a, 64514, 64512)
	s.ab.Passive, s.ac.Passive = true, true
	mustApply(t, s.a.Executor, effects.StartServer{Server: s.a.server(64512)})
	mustApply(t, s.b.Executor, effects.StartServer{Server: s.b.server(64513)})
	mustApply(t, s.c.Executor, effects.StartServer{Server: s.c.server(64514)})
	return s
}

// peer adds the neighbors, a's with export policy, and waits until a's
// sessions with b and c are established.
func (s *three) peer(t *testing.T, policy state.Policy) {
	t.Helper()
	mustApply(t, s.a.Executor,
		effects.SetPolicy{Addr: s.ab.Address, Policy: policy, Gen: 1}, effects.AddPeer{Neighbor: s.ab, Gen: 1},
		effects.SetPolicy{Addr: s.ac.Address, Policy: policy, Gen: 1}, effects.AddPeer{Neighbor: s.ac, Gen: 1})
	mustApply(t, s.b.Executor, effects.AddPeer{Neighbor: s.ba, Gen: 1})
	mustApply(t, s.c.Executor, effects.AddPeer{Neighbor: s.ca, Gen: 1})
	s.a.events.waitState(t, s.b.addr, "established", establishTimeout)
	s.a.events.waitState(t, s.c.addr, "established", establishTimeout)
}

// mustApply executes effs and fails the test unless every result is a
// success.
func mustApply(t *testing.T, e *Executor, effs ...effects.Effect) []state.Action {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := e.Execute(ctx, effs)
	for _, r := range res {
		switch r := r.(type) {
		case state.PeerApplyFailed:
			t.Fatalf("unexpected failure: %s", r.Error)
		case state.ServerApplyFailed:
			t.Fatalf("unexpected server failure: %s", r.Error)
		}
	}
	return res
}

// actionLog keeps every action a watch dispatched, each an A.
type actionLog[A state.Action] struct {
	mu      sync.Mutex
	events  []A
	changed chan struct{}      // closed and replaced on every action
	also    func(state.Action) // an agent the actions go to as well
}

func (l *actionLog[A]) add(a state.Action) {
	l.mu.Lock()
	l.events = append(l.events, a.(A))
	close(l.changed)
	l.changed = make(chan struct{})
	also := l.also
	l.mu.Unlock()
	if also != nil {
		also(a)
	}
}

// forward sends every later action to fn too.
func (l *actionLog[A]) forward(fn func(state.Action)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.also = fn
}

// recorder keeps every session action a watch dispatched.
type recorder struct {
	actionLog[state.SessionStateChanged]
}

func newRecorder() *recorder {
	return &recorder{actionLog[state.SessionStateChanged]{changed: make(chan struct{})}}
}

// mark is the number of events so far, to look only at what follows.
func (r *recorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// since lists the events for addr after mark m.
func (r *recorder) since(m int, addr string) []state.SessionStateChanged {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []state.SessionStateChanged
	for _, ev := range r.events[m:] {
		if ev.Address.String() == addr {
			out = append(out, ev)
		}
	}
	return out
}

// last is the latest state reported for addr ("" if none).
func (r *recorder) last(addr string) string {
	evs := r.since(0, addr)
	if len(evs) == 0 {
		return ""
	}
	return evs[len(evs)-1].State
}

// waitUntil blocks until cond holds (checked on every event) or the
// timeout passes; it reports whether cond held.
func (r *recorder) waitUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		ch := r.changed
		r.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return cond()
		}
	}
}

// waitState waits until addr's latest reported state is want.
func (r *recorder) waitState(t *testing.T, addr, want string, timeout time.Duration) {
	t.Helper()
	if !r.waitUntil(timeout, func() bool { return r.last(addr) == want }) {
		t.Fatalf("session %s: want %s within %s, have %q; events: %s", addr, want, timeout, r.last(addr), r.describe(addr))
	}
}

// waitBounce waits until addr's session, after mark m, first left
// established and then came back.
func (r *recorder) waitBounce(t *testing.T, m int, addr string, timeout time.Duration) {
	t.Helper()
	ok := r.waitUntil(timeout, func() bool {
		evs := r.since(m, addr)
		return len(evs) >= 2 && evs[0].State != "established" && evs[len(evs)-1].State == "established"
	})
	if !ok {
		t.Fatalf("session %s: want a drop and established again within %s; events: %s", addr, timeout, r.describe(addr))
	}
}

func (r *recorder) describe(addr string) string {
	var parts []string
	for _, ev := range r.since(0, addr) {
		s := ev.State
		if ev.Reason != "" {
			s += " (" + ev.Reason + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " -> ")
}

// pollUntil re-checks cond every few milliseconds until it holds or the
// timeout passes, for state that no event announces (RIB contents).
func pollUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}

// currentPeer is bgp's view of one neighbor; a stopped speaker (nil) has
// none.
func currentPeer(ctx context.Context, bgp *server.BgpServer, addr netip.Addr) (*api.Peer, bool, error) {
	if bgp == nil {
		return nil, false, nil
	}
	var found *api.Peer
	err := bgp.ListPeer(ctx, &api.ListPeerRequest{Address: addr.String()}, func(p *api.Peer) { found = p })
	return found, found != nil, err
}
