package e2e

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/effects/gobgp"
	"github.com/peeragent/peeragent/internal/testrig/bird"
	"github.com/peeragent/peeragent/internal/testrig/frr"
	"github.com/peeragent/peeragent/internal/testrig/logbuf"
	"github.com/peeragent/peeragent/state"
)

// The no-flap test (docs/semantics.md §5: a change never resets a session it
// does not concern): the real Loop, with the real GoBGP
// executor on 127.0.0.1, has Established sessions with a real BIRD 2
// (127.0.0.40) and a real FRR bgpd (127.0.0.41), both with TCP-MD5
// passwords from Secrets. 1,000 changes that do not concern node-a's two
// neighbors go through Dispatch, among them changes of other nodes'
// affinities, node-a's pods that lend out no address, pool fields no rule
// reads and identical relists of the route kinds (docs/routes.md §10, "Zero
// calls"), while both peers hold node-a's block; the peers' own counters
// (BIRD's log and `show protocols all`, FRR's `show bgp neighbors json`)
// show no reset and no route update, and a counting wrapper round the
// executor shows no call (no path call either). A password
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
	bird.Require(t)
	frr.Require(t)
	noflapRequireAddrs(t, noflapOurAddr, noflapBirdAddr, noflapFRRAddr)
	ctx, cancelAll := context.WithTimeout(context.Background(), noflapBudget)
	defer cancelAll()
	start := time.Now()

	// The peers, configured to peer with node-a on our listen port.
	ourPort := freePort(t, noflapOurAddr)
	birdAddr, frrAddr := netip.MustParseAddr(noflapBirdAddr), netip.MustParseAddr(noflapFRRAddr)
	ourAddr := netip.MustParseAddr(noflapOurAddr)
	birdPort := bird.FreePort(t, birdAddr)
	frrPort := frr.FreePort(t, frrAddr)
	birdPeer := bird.Start(t, bird.Config{Address: birdAddr, Port: birdPort, AS: noflapBirdAS,
		Neighbors: []bird.Neighbor{{Name: noflapProto, Address: ourAddr, Port: ourPort, AS: noflapOurAS, Password: noflapBirdPw}}})
	frrCfg := frr.Config{Address: frrAddr, Port: frrPort, AS: noflapFRRAS,
		Neighbors: []frr.Neighbor{{Name: "peeragent", Address: ourAddr, Port: ourPort, AS: noflapOurAS, Password: noflapFRRPw1}}}
	frrPeer := frr.Start(t, frrCfg)

	// The agent: the real Loop and the real GoBGP executor, counted.
	cl := newNoflapCluster(ourPort, netip.AddrPortFrom(birdAddr, uint16(birdPort)), netip.AddrPortFrom(frrAddr, uint16(frrPort)))
	logs := &logbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	bgp := gobgp.New(gobgp.Options{ListenAddresses: []string{noflapOurAddr}, Logger: log, GoBGPLevel: slog.LevelWarn})
	counter := &recorder{inner: bgp}
	watcher := &noflapSecretWatcher{cluster: cl}
	l := agent.NewLoop(agent.LoopConfig{Initial: state.New("node-a", state.Options{}), Speaker: counter, Secrets: watcher,
		Log: log, Journal: 2 * noflapChanges})
	reduced := newTally(l.Journal())
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
	noflapWaitEstablished(ctx, t, l, birdPeer, frrPeer, birdAddr, frrAddr)
	t.Logf("both sessions established on all three views %v after start", time.Since(start).Round(time.Millisecond))
	time.Sleep(time.Second) // let the start-up settle (collisions, first updates) before taking the baseline
	noflapWaitEstablished(ctx, t, l, birdPeer, frrPeer, birdAddr, frrAddr)
	noflapWaitBlock(ctx, t, birdPeer, frrPeer, ourAddr)
	before := noflapLook(t, birdPeer, frrPeer, ourAddr)
	if !before.frr.MD5 {
		t.Errorf("FRR's neighbor %s has no MD5 password: %s", ourAddr, before.frr)
	}
	ourBefore := map[netip.Addr]state.Session{birdAddr: noflapSession(l, birdAddr), frrAddr: noflapSession(l, frrAddr)}
	for a, s := range ourBefore {
		if s.Applied == nil || s.Applied.Password.IsZero() {
			t.Errorf("our applied config for %s has no password", a)
		}
	}

	// 1,000 unrelated changes, as fast as Dispatch takes them.
	mark, reducedMark := counter.mark(), noflapCount(t, reduced)
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
			if !poll(ctx, time.Millisecond, func() bool { return noflapCount(t, reduced).total > reducedMark.total+i }) {
				t.Fatalf("timed out waiting for change %d to be reduced", i)
			}
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
	got := noflapCount(t, reduced).since(reducedMark)
	steps := noflapSteps(t, l) - steps0
	cl.checkInputs(t, l.State())
	if n := l.State().Out.Neighbors.Len(); n != 2 {
		t.Errorf("node-a has %d neighbors after the changes, want the 2 peers", n)
	}
	after := noflapLook(t, birdPeer, frrPeer, ourAddr)
	t.Logf("change mix: %s; %d loop steps (Reduce+Diff: %d changes one per step, %d in a burst); all reduced in %v, then %v of quiet",
		noflapMix(mix), steps, noflapChanges/2, noflapChanges-noflapChanges/2, drained.Round(time.Millisecond), noflapQuiet)
	t.Logf("%d unrelated changes: speaker calls %d (%s %d, %s %d); secret watch calls %d; actions reduced %d (%d session, %d results); "+
		"BIRD establishments %d→%d, same session %v (since %s → %s); FRR connectionsEstablished %d→%d, dropped %d→%d; "+
		"our flaps BIRD %d→%d, FRR %d→%d",
		noflapChanges, len(effs), noflapBirdAddr, perAddr[noflapBirdAddr], noflapFRRAddr, perAddr[noflapFRRAddr],
		watcher.calls()-watchesBefore, got.total, got.sessions, got.results,
		before.birdN, after.birdN, after.bird.SameSessionAs(before.bird), before.bird.SinceText, after.bird.SinceText,
		before.frr.ConnectionsEstablished, after.frr.ConnectionsEstablished, before.frr.ConnectionsDropped, after.frr.ConnectionsDropped,
		ourBefore[birdAddr].Flaps, noflapSession(l, birdAddr).Flaps, ourBefore[frrAddr].Flaps, noflapSession(l, frrAddr).Flaps)

	if perAddr[noflapBirdAddr] != 0 || perAddr[noflapFRRAddr] != 0 {
		t.Errorf("the executor was handed effects for the peers during the unrelated changes:\n%s", strings.Join(counter.strings(mark), "\n"))
	} else if len(effs) != 0 {
		t.Errorf("the executor was handed %d effects during the unrelated changes:\n%s", len(effs), strings.Join(counter.strings(mark), "\n"))
	}
	if n := watcher.calls() - watchesBefore; n != 0 {
		t.Errorf("%d secret watch calls during the unrelated changes", n)
	}
	if got.total != noflapChanges || got.sessions != 0 || got.results != 0 {
		t.Errorf("the loop reduced %d actions (%d session changes, %d results), want exactly the %d changes",
			got.total, got.sessions, got.results, noflapChanges)
	}
	if !after.bird.SameSessionAs(before.bird) || after.birdN != before.birdN {
		t.Errorf("BIRD's session was reset: before %s (%d establishments), after %s (%d)", before.bird, before.birdN, after.bird, after.birdN)
	}
	if !after.frr.SameSessionAs(before.frr) {
		t.Errorf("FRR's session was reset: before %s, after %s", before.frr, after.frr)
	}
	noflapSameRoutes(t, before.bird, after.bird, before.frr, after.frr)
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
	if err := frrPeer.Reconfigure(frrCfg); err != nil {
		t.Fatal(err)
	}
	frrRot, err := frrPeer.WaitNeighbor(ctx, ourAddr, func(n frr.NeighborState) bool {
		return n.Established() && n.ConnectionsEstablished > after.frr.ConnectionsEstablished
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
	final := noflapLook(t, birdPeer, frrPeer, ourAddr)
	rotEffs := counter.since(mark)
	rotAddr := noflapByAddr(rotEffs)
	t.Logf("positive control, FRR password rotated: speaker calls %d (%s %d, %s %d) [%s]; "+
		"FRR connectionsEstablished %d→%d, dropped %d→%d (re-established in %v); BIRD establishments %d→%d, same session %v; "+
		"our flaps FRR %d, BIRD %d",
		len(rotEffs), noflapFRRAddr, rotAddr[noflapFRRAddr], noflapBirdAddr, rotAddr[noflapBirdAddr], strings.Join(counter.strings(mark), "; "),
		after.frr.ConnectionsEstablished, final.frr.ConnectionsEstablished, after.frr.ConnectionsDropped, final.frr.ConnectionsDropped,
		reEstablished.Round(time.Millisecond), after.birdN, final.birdN, final.bird.SameSessionAs(before.bird),
		noflapSession(l, frrAddr).Flaps, noflapSession(l, birdAddr).Flaps)

	if up, ok := noflapOnly(rotEffs).(effects.UpdatePeer); !ok || up.New.Address != frrAddr || !up.Reset {
		t.Errorf("rotation effects: %v, want exactly one session-reset update-peer for %s", counter.strings(mark), frrAddr)
	}
	if final.frr.ConnectionsEstablished != after.frr.ConnectionsEstablished+1 || !final.frr.SameSessionAs(frrRot) {
		t.Errorf("FRR after the rotation: %s, want exactly one more establishment than %s", final.frr, after.frr)
	}
	if !final.bird.SameSessionAs(before.bird) || final.birdN != before.birdN {
		t.Errorf("BIRD's session moved with FRR's rotation: before %s (%d), after %s (%d)", before.bird, before.birdN, final.bird, final.birdN)
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
