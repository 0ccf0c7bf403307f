package gobgp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	birdtest "github.com/peeragent/peeragent/internal/testrig/bird"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// Interop with BIRD 2 (Debian's bird2) as a third-party peer of the agent
// core: Actions go through reducer.Reduce and effects.Diff, this executor
// carries out the speaker's effects, and its results and WatchSessions'
// session Actions go back through Reduce. Our speaker is node-a on
// 127.0.0.1; each test runs its own BIRD on its own address (127.0.0.30
// and up), peering with node-a through a BGPPeer (peerIP ADDR:PORT, BIRD's
// AS) whose nodeSelector matches node-a's rack. node-b, in another rack,
// is there to be changed without concerning node-a.
const (
	birdAS     = 65030
	birdProto  = "peeragent" // BIRD's protocol name for the session with us
	birdPeer   = "bird-tor"  // the BGPPeer
	birdSecret = "bird-md5"  // the Secret holding the MD5 password
	birdKey    = "password"
	ourNode    = "node-a"
	ourAddr    = "127.0.0.1"
	ourAS      = 64512 // Calico's default, as no BGPConfiguration sets one
)

// birdAgent is the agent loop in miniature, as docs/design.md draws it: one
// goroutine is the only caller of Reduce; it diffs each new State, runs the
// speaker's effects on the executor and reduces their results in turn, and
// answers secret watches from its own store, as the watch layer would.
// Session Actions from WatchSessions queue up behind the test's Actions.
type birdAgent struct {
	sp   *speaker
	in   chan birdRequest
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex // guards what follows
	s       state.State
	secrets map[string]state.Secret
	trace   []string // every step: the Action and its effects
}

type birdRequest struct {
	a     state.Action
	reply chan []effects.Effect // the effects of a itself; nil for session Actions
}

func newBirdAgent(t *testing.T, sp *speaker) *birdAgent {
	ag := &birdAgent{
		sp: sp, in: make(chan birdRequest, 256), stop: make(chan struct{}), done: make(chan struct{}),
		s: state.New(ourNode, state.Options{}), secrets: map[string]state.Secret{},
	}
	// The watch must never block: GoBGP's goroutines outlive the test.
	sp.events.forward(func(a state.Action) {
		select {
		case ag.in <- birdRequest{a: a}:
		case <-ag.stop:
		}
	})
	go ag.run()
	t.Cleanup(func() {
		close(ag.stop)
		<-ag.done
		if t.Failed() {
			t.Logf("agent steps:\n%s", strings.Join(ag.steps(), "\n"))
		}
	})
	return ag
}

func (ag *birdAgent) run() {
	defer close(ag.done)
	for {
		select {
		case <-ag.stop:
			return
		case r := <-ag.in:
			effs := ag.reduce(r.a)
			if r.reply != nil {
				r.reply <- effs
			}
		}
	}
}

// dispatch hands a to the loop and returns the effects of its own step,
// once everything they caused has been reduced too.
func (ag *birdAgent) dispatch(t *testing.T, a state.Action) []effects.Effect {
	t.Helper()
	reply := make(chan []effects.Effect, 1)
	ag.in <- birdRequest{a: a, reply: reply} // the loop drains in at most one Execute
	select {
	case effs := <-reply:
		return effs
	case <-time.After(establishTimeout):
		t.Fatalf("agent loop did not finish %s", a.ActionName())
		return nil
	}
}

// reduce runs a and the results of its effects through Reduce and Diff
// until nothing is left to do; it returns a's own effects.
func (ag *birdAgent) reduce(a state.Action) []effects.Effect {
	var first []effects.Effect
	queue := []state.Action{a}
	for i := 0; len(queue) > 0; i++ {
		next := queue[0]
		queue = queue[1:]
		ag.mu.Lock()
		prev := ag.s
		ag.s = reducer.Reduce(prev, next)
		effs := effects.Diff(prev, ag.s)
		ag.trace = append(ag.trace, describeStep(next, effs))
		ag.mu.Unlock()
		if i == 0 {
			first = effs
		}
		queue = append(queue, ag.execute(effs)...)
	}
	return first
}

// execute carries out the speaker's effects and answers secret watches;
// there are no VPP routes here (no reachableBy). A failure shows in the
// State: the neighbor's phase is failed, with its last error.
func (ag *birdAgent) execute(effs []effects.Effect) []state.Action {
	speakerEffs, _, watches := effects.Group(effs)
	out := ag.answerWatches(watches)
	if len(speakerEffs) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out = append(out, ag.sp.Execute(ctx, speakerEffs)...)
	}
	return out
}

// answerWatches is what each new secret watch sees first.
func (ag *birdAgent) answerWatches(watches []effects.Effect) []state.Action {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	var out []state.Action
	for _, w := range watches {
		ws, ok := w.(effects.WatchSecret)
		switch sec, found := ag.secrets[ws.Name]; {
		case !ok:
		case found:
			out = append(out, state.SecretUpserted{Secret: sec})
		default:
			out = append(out, state.SecretDeleted{Name: ws.Name})
		}
	}
	return out
}

func describeStep(a state.Action, effs []effects.Effect) string {
	line := a.ActionName()
	if sc, ok := a.(state.SessionStateChanged); ok {
		line += fmt.Sprintf(" %s %s %q", sc.Address, sc.State, sc.Reason)
	}
	for _, e := range effs {
		line += "\n\t" + e.String()
	}
	return line
}

func (ag *birdAgent) steps() []string {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	return append([]string(nil), ag.trace...)
}

// setSecret changes the Secret the agent's watch sees; the test dispatches
// the SecretUpserted the watch would deliver.
func (ag *birdAgent) setSecret(name, password string) state.Secret {
	sec := state.Secret{Name: name, Data: map[string]state.Password{birdKey: state.NewPassword(password)}}
	ag.mu.Lock()
	defer ag.mu.Unlock()
	ag.secrets[name] = sec
	return sec
}

// birdRig is our speaker and its agent loop facing one BIRD.
type birdRig struct {
	sp   *speaker
	ag   *birdAgent
	bird *birdtest.Bird
	cfg  birdtest.Config
	peer netip.AddrPort // BIRD: our neighbor
}

// newBirdRig starts BIRD on birdAddr (with password as its MD5 key, if
// any; passive, waiting for us to connect, if birdPassive) and our
// speaker, then feeds node-a's agent its first lists.
func newBirdRig(t *testing.T, birdAddr, password string, birdPassive bool) *birdRig {
	t.Helper()
	return newBirdRigConfig(t, birdAddr, password, birdPassive, func(*birdtest.Config) {})
}

// newBirdRigConfig is newBirdRig with BIRD's configuration adjusted by
// more (e.g. routes it announces) before it starts.
func newBirdRigConfig(t *testing.T, birdAddr, password string, birdPassive bool, more func(*birdtest.Config)) *birdRig {
	t.Helper()
	birdtest.Require(t)
	requireLoopback(t, birdAddr)
	addr := netip.MustParseAddr(birdAddr)
	r := &birdRig{sp: newSpeaker(t, ourAddr)}
	r.peer = netip.AddrPortFrom(addr, uint16(birdtest.FreePort(t, addr)))
	r.cfg = birdtest.Config{Address: addr, Port: int(r.peer.Port()), AS: birdAS, Neighbors: []birdtest.Neighbor{{
		Name: birdProto, Address: netip.MustParseAddr(ourAddr), Port: int(r.sp.port), AS: ourAS, Password: password,
		Passive: birdPassive,
	}}}
	more(&r.cfg)
	r.bird = birdtest.Start(t, r.cfg)
	r.ag = newBirdAgent(t, r.sp)
	if password != "" {
		r.ag.setSecret(birdSecret, password)
	}
	for _, a := range r.inputs(password != "") {
		r.ag.dispatch(t, a)
	}
	return r
}

// inputs are the complete lists of every source, as a (re)list delivers
// them: fresh values each call.
func (r *birdRig) inputs(md5 bool) []state.Action {
	meshOff := false
	peer := state.BGPPeer{Name: birdPeer, NodeSelector: "rack == 'r1'", PeerIP: r.peer.String(), ASNumber: birdAS}
	if md5 {
		peer.Password = &state.SecretKeyRef{Name: birdSecret, Key: birdKey}
	}
	return []state.Action{
		state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{
			{Name: ourNode, IPv4Address: ourAddr + "/8", Labels: map[string]string{"rack": "r1"}},
			{Name: "node-b", IPv4Address: "127.0.0.2/8", Labels: map[string]string{"rack": "r2"}},
		}},
		state.SourceSynced{Kind: state.KindBGPConfiguration, Configs: []state.BGPConfiguration{
			{Name: "default", NodeToNodeMeshEnabled: &meshOff},
			{Name: "node." + ourNode, ListenPort: int32(r.sp.port)},
		}},
		state.SourceSynced{Kind: state.KindBGPFilter},
		state.SourceSynced{Kind: state.KindBGPPeer, Peers: []state.BGPPeer{peer}},
		state.SourceSynced{Kind: state.KindIPPool}, state.SourceSynced{Kind: state.KindBlockAffinity},
		state.SourceSynced{Kind: state.KindPod},
	}
}

// waitEstablished waits until our State has the neighbor established and
// BIRD's `show protocols` says Established, and returns BIRD's view.
func (r *birdRig) waitEstablished(t *testing.T) birdtest.ProtocolState {
	t.Helper()
	ok := pollUntil(establishTimeout, func() bool {
		s := r.session()
		return s.Phase == state.PhaseFailed || s.Phase == state.PhaseEstablished && s.BGP == "established"
	})
	if s := r.session(); !ok || s.Phase != state.PhaseEstablished {
		t.Fatalf("our State never had %s established within %s: %s", r.peer.Addr(), establishTimeout, r.describe())
	}
	ctx, cancel := context.WithTimeout(context.Background(), establishTimeout)
	defer cancel()
	p, err := r.bird.WaitEstablished(ctx, birdProto)
	if err != nil {
		t.Fatalf("%v; ours: %s", err, r.describe())
	}
	if s := r.session(); s.Phase != state.PhaseEstablished {
		t.Fatalf("BIRD is Established, our State no longer: %s", r.describe())
	}
	return p
}

// session is the State's session with BIRD.
func (r *birdRig) session() state.Session {
	r.ag.mu.Lock()
	defer r.ag.mu.Unlock()
	if s, ok := r.ag.s.Out.Sessions.Get(state.AddrKey(r.peer.Addr())); ok {
		return *s
	}
	return state.Session{}
}

// noReset checks that nothing reset the session with BIRD since before
// (n0 establishments logged then): BIRD's session in each of after is
// before's, BIRD logged no establishment since, ours never flapped.
func (r *birdRig) noReset(t *testing.T, before birdtest.ProtocolState, n0 int, after ...birdtest.ProtocolState) {
	t.Helper()
	for _, p := range after {
		if !p.SameSessionAs(before) {
			t.Errorf("BIRD's session changed: before %s, after %s", before, p)
		}
	}
	if n := r.bird.Establishments(birdProto); n != n0 {
		t.Errorf("BIRD logged %d establishments, want %d (no reset)", n, n0)
	}
	if s := r.session(); s.Flaps != 0 {
		t.Errorf("our session flapped: %s", r.describe())
	}
}

// describe is our side of the session, for failure messages.
func (r *birdRig) describe() string {
	s := r.session()
	return fmt.Sprintf("phase %q bgp %q gen %d flaps %d last down %q last error %q; session actions: %s",
		s.Phase, s.BGP, s.Gen, s.Flaps, s.LastDownReason, s.LastError, r.sp.events.describe(r.peer.Addr().String()))
}

// dialUnsigned reports whether a TCP connection without an MD5 signature
// from `from` to `to` is accepted (our speaker closes it at once when
// `from` is no neighbor of its).
func dialUnsigned(from string, to netip.AddrPort) bool {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 500 * time.Millisecond}
	c, err := d.Dial("tcp4", to.String())
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// TestBirdEstablishes: from the Calico objects alone, the agent core
// configures BIRD as a neighbor and the session reaches Established on
// both sides, without and with TCP-MD5 (the password from a Secret the
// agent asked to watch). BIRD, which connects after 1 s, usually dials
// first; a passive BIRD makes our speaker dial (after GoBGP's 1-2 s), so
// both directions of the MD5 handshake are covered. With MD5, our
// listener refuses an unsigned connection from BIRD's address while it
// accepts one from another address: the MPTCP trap of docs/design.md would
// accept both, and the session would still come up through one dial.
func TestBirdEstablishes(t *testing.T) {
	birdtest.Require(t)
	tests := []struct {
		name, birdAddr, password string
		birdPassive              bool
	}{
		{name: "without-md5", birdAddr: "127.0.0.30"},
		{name: "with-md5", birdAddr: "127.0.0.31", password: "bird-md5-first"},
		{name: "with-md5-we-dial", birdAddr: "127.0.0.32", password: "bird-md5-dial", birdPassive: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := newBirdRig(t, tc.birdAddr, tc.password, tc.birdPassive)
			p := r.waitEstablished(t)
			incoming := strings.Contains(r.bird.Log(), "Incoming connection from "+ourAddr)
			t.Logf("established on both sides after %v (we dialled: %v); BIRD: %s; session %q, hold timer %q",
				time.Since(start).Round(time.Millisecond), incoming, p, p.Details["Session"], p.Details["Hold timer"])
			if tc.birdPassive && !incoming {
				t.Errorf("passive BIRD logged no incoming connection from %s:\n%s", ourAddr, r.bird.Log())
			}
			if got, want := p.Details["Neighbor AS"], strconv.Itoa(ourAS); got != want {
				t.Errorf("BIRD sees neighbor AS %s, want %s", got, want)
			}
			if n := r.bird.Establishments(birdProto); n != 1 {
				t.Errorf("BIRD logged %d establishments, want 1", n)
			}
			s := r.session()
			if s.Applied == nil || s.Applied.PeerASN != birdAS || s.Applied.Port != r.peer.Port() || s.Flaps != 0 {
				t.Errorf("our session: %+v, applied %+v", s, s.Applied)
			}
			if got := s.Applied != nil && !s.Applied.Password.IsZero(); got != (tc.password != "") {
				t.Errorf("applied config has a password: %v, want %v", got, tc.password != "")
			}
			if tc.password == "" {
				return
			}
			listener := netip.AddrPortFrom(netip.MustParseAddr(ourAddr), r.sp.port)
			if dialUnsigned(tc.birdAddr, listener) {
				t.Errorf("our listener accepted an unsigned connection from %s: TCP-MD5 is not in force", tc.birdAddr)
			}
			if !dialUnsigned(ourAddr, listener) {
				t.Errorf("our listener refused an unsigned connection from %s, which has no key", ourAddr)
			}
		})
	}
}

// TestBirdPasswordRotation: a new value in the Secret is one session-reset
// UpdatePeer, and BIRD sees the session drop; once BIRD has the new key
// too (reconfigured at once), both sides are Established again,
// after exactly one more establishment in BIRD's log and one flap in ours.
// No password reaches our logs or the effects' text.
func TestBirdPasswordRotation(t *testing.T) {
	const first, second = "bird-rotate-one", "bird-rotate-two"
	r := newBirdRig(t, "127.0.0.33", first, false)
	before := r.waitEstablished(t)
	n0 := r.bird.Establishments(birdProto)
	start := time.Now()

	effs := r.ag.dispatch(t, state.SecretUpserted{Secret: r.ag.setSecret(birdSecret, second)})
	if len(effs) != 1 {
		t.Fatalf("rotation effects: %v, want one update-peer", effs)
	}
	up, ok := effs[0].(effects.UpdatePeer)
	if !ok || !up.Reset || len(up.Changes) != 1 || up.Changes[0].Field != "password" {
		t.Fatalf("rotation effect: %s, want a session-reset update-peer of the password", effs[0])
	}
	ctx, cancel := context.WithTimeout(context.Background(), establishTimeout)
	defer cancel()
	down, err := r.bird.WaitProtocol(ctx, birdProto, func(p birdtest.ProtocolState) bool { return !p.Established() })
	if err != nil {
		t.Fatalf("BIRD never saw our reset: %v", err)
	}
	t.Logf("BIRD after our update-peer (%v): %s", time.Since(start).Round(time.Millisecond), down)

	cfg := r.cfg
	cfg.Neighbors = append([]birdtest.Neighbor(nil), r.cfg.Neighbors...)
	cfg.Neighbors[0].Password = second
	if err := r.bird.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	}
	after := r.waitEstablished(t)
	t.Logf("re-established %v after the rotation; BIRD: %s", time.Since(start).Round(time.Millisecond), after)
	if after.SameSessionAs(before) || !after.Since.After(before.Since) {
		t.Errorf("BIRD's session did not restart: before %s, after %s", before, after)
	}
	if n := r.bird.Establishments(birdProto); n != n0+1 {
		t.Errorf("BIRD logged %d establishments, want %d", n, n0+1)
	}
	s := r.session()
	if s.Flaps != 1 || s.LastDownReason == "" || s.Applied == nil || s.Applied.Password.Reveal() != second {
		t.Errorf("our session after the rotation: %s", r.describe())
	}
	t.Logf("our session: %s", r.describe())
	text := r.sp.logs.String() + strings.Join(r.ag.steps(), "\n")
	if strings.Contains(text, first) || strings.Contains(text, second) {
		t.Errorf("a password reached our logs or the effects' text")
	}
}

// TestBirdUnrelatedChangesKeepSession: with the session Established, what
// does not concern node-a's neighbors (another node's labels, even one
// that flips the BGPPeer's nodeSelector for it; a label of our own that
// flips nothing; a Secret nobody uses; the used Secret delivered again
// unchanged; a relist of identical objects) makes no effect at all, and
// neither side sees the session move.
func TestBirdUnrelatedChangesKeepSession(t *testing.T) {
	r := newBirdRig(t, "127.0.0.34", "bird-md5-stable", false)
	before := r.waitEstablished(t)
	n0, gen0, mark := r.bird.Establishments(birdProto), r.session().Gen, r.sp.events.mark()

	tests := []struct {
		name    string
		actions []state.Action
	}{
		{name: "other-node-labels", actions: []state.Action{
			state.NodeUpserted{Node: state.Node{Name: "node-b", IPv4Address: "127.0.0.2/8", Labels: map[string]string{"rack": "r1", "zone": "z2"}}},
		}},
		{name: "own-label-flipping-nothing", actions: []state.Action{
			state.NodeUpserted{Node: state.Node{Name: ourNode, IPv4Address: ourAddr + "/8", Labels: map[string]string{"rack": "r1", "zone": "z1"}}},
		}},
		{name: "secret-nobody-uses", actions: []state.Action{
			state.SecretUpserted{Secret: state.Secret{Name: "unused", Data: map[string]state.Password{birdKey: state.NewPassword("x")}}},
		}},
		{name: "same-secret-again", actions: []state.Action{
			state.SecretUpserted{Secret: r.ag.setSecret(birdSecret, "bird-md5-stable")},
		}},
		{name: "identical-relist", actions: r.inputs(true)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, a := range tc.actions {
				if effs := r.ag.dispatch(t, a); len(effs) != 0 {
					t.Errorf("%s made effects: %v", a.ActionName(), effs)
				}
			}
		})
	}
	if r.sp.events.waitUntil(quietWindow, func() bool { return len(r.sp.events.since(mark, r.peer.Addr().String())) > 0 }) {
		t.Errorf("our session moved: %s", r.describe())
	}
	after, err := r.bird.Protocol(birdProto)
	if err != nil {
		t.Fatal(err)
	}
	if !after.SameSessionAs(before) {
		t.Errorf("BIRD's session changed: before %s, after %s", before, after)
	}
	if n := r.bird.Establishments(birdProto); n != n0 {
		t.Errorf("BIRD logged %d establishments, want %d", n, n0)
	}
	if s := r.session(); s.Phase != state.PhaseEstablished || s.Gen != gen0 || s.Flaps != 0 {
		t.Errorf("our session: %s, want established at gen %d", r.describe(), gen0)
	}
	t.Logf("after the unrelated changes and %v of quiet, BIRD: %s (%d establishment)", quietWindow, after, n0)
}
