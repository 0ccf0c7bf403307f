package gobgp

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// watchAll records everything Watch dispatches (sessions and learned
// paths, in the one order the watch gives them) until the test ends.
func watchAll(t *testing.T, sp *speaker) *learnedLog {
	t.Helper()
	l := &learnedLog{changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sp.Watch(ctx, l.add) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch: %v", err)
		}
	})
	return l
}

// factGen is the generation a learned-path fact carries; ok is false for
// a session action.
func factGen(a state.Action) (uint64, bool) {
	switch x := a.(type) {
	case state.BestPathsChanged:
		return x.Gen, true
	case state.EndOfRIBReceived:
		return x.Gen, true
	}
	return 0, false
}

// sessionOf matches a session action of addr in the given state.
func sessionOf(addr netip.Addr, st string) func(state.Action) bool {
	return func(a state.Action) bool {
		x, ok := a.(state.SessionStateChanged)
		return ok && x.Address == addr && x.State == st
	}
}

// awaitBest waits, from index from on, for a fact of generation gen that
// lists prefix (originated by origin); GoBGP v4.8.0 under load has lost
// an UPDATE sent just after a session came up (TestPairSessionLifecycle),
// so once it is late origin's session towards a is soft-reset out.
func awaitBest(t *testing.T, l *learnedLog, from int, origin *speaker, toward *state.Neighbor, gen uint64, prefix string) int {
	t.Helper()
	arrived := func(a state.Action) bool { _, ok := bestOf(a, gen, prefix); return ok }
	if !pollUntil(5*time.Second, func() bool { return slices.ContainsFunc(l.all()[from:], arrived) }) {
		t.Logf("GoBGP lost an UPDATE: adj-out of %s %v; soft reset out", origin.addr, tables(origin, api.TableType_TABLE_TYPE_ADJ_OUT))
		_ = origin.Speaker().ResetPeer(context.Background(), &api.ResetPeerRequest{Address: toward.Address.String(),
			Soft: true, Direction: api.ResetPeerRequest_DIRECTION_OUT})
	}
	return l.wait(t, from, "best path "+prefix+" of the generation", arrived)
}

// TestWatchOneStreamAcrossGenerations: Watch gives sessions and learned
// paths as one stream per speaker, in GoBGP's order (a neighbor is
// established before a path it sent); a new generation of the running
// speaker is a new initial snapshot of the same paths and the End-of-RIBs
// already received, under the new generation, with nothing of the
// session repeated or lost; a stop reports the session idle ("speaker
// stopped") and nothing of the stopped speaker follows; the next speaker's
// facts all carry its generation. A Watch that starts while a speaker
// runs gets the sessions' states and the snapshot of the current
// generation (docs/routes.md §9.1 rules 3 and 4).
func TestWatchOneStreamAcrossGenerations(t *testing.T) {
	p := newPair(t)
	w := watchAll(t, p.a)
	b := netip.MustParseAddr(p.b.addr)
	mustApply(t, p.a.Executor, effects.StartServer{Server: p.a.server(64512), Gen: 1}, effects.AddPeer{Neighbor: p.na, Gen: 1})
	mustApply(t, p.b.Executor, effects.StartServer{Server: p.b.server(64513), Gen: 1}, effects.AddPeer{Neighbor: p.nb, Gen: 1})
	p.waitEstablished(t)
	originate(t, p.b, "10.20.0.0/16")
	i := awaitBest(t, w, 0, p.b, p.nb, 1, "10.20.0.0/16")
	if up := w.wait(t, 0, "b established", sessionOf(b, "established")); up > i {
		t.Errorf("the path of b (fact %d) came before b's session was established (fact %d):\n%s", i, up, w.describe())
	}
	eor := w.wait(t, 0, "End-of-RIB from b", func(a state.Action) bool {
		return a == state.Action(state.EndOfRIBReceived{Gen: 1, Neighbor: b, Family: "ipv4-unicast"})
	})

	// A new generation of the same speaker (a server retry that found it
	// running): a snapshot of what it has, nothing of the session.
	m := len(w.all())
	mustApply(t, p.a.Executor, effects.StartServer{Server: p.a.server(64512), Gen: 2})
	j := w.wait(t, m, "initial snapshot of generation 2", func(a state.Action) bool {
		x, ok := a.(state.BestPathsChanged)
		return ok && x.Gen == 2
	})
	if x := w.all()[j].(state.BestPathsChanged); !x.Init {
		t.Errorf("first fact of generation 2: %+v, want an initial snapshot", x)
	}
	if paths, ok := bestOf(w.all()[j], 2, "10.20.0.0/16"); !ok || len(paths) != 1 || paths[0].Neighbor != b || paths[0].Withdrawn {
		t.Errorf("snapshot of generation 2: %+v, want b's path of 10.20.0.0/16", w.all()[j])
	}
	w.wait(t, m, "End-of-RIB from b again, of generation 2", func(a state.Action) bool {
		return a == state.Action(state.EndOfRIBReceived{Gen: 2, Neighbor: b, Family: "ipv4-unicast"})
	})
	late := watchAll(t, p.a)
	late.wait(t, 0, "the late watch's state of b", sessionOf(b, "established"))
	k := late.wait(t, 0, "the late watch's snapshot", func(a state.Action) bool { _, ok := bestOf(a, 2, "10.20.0.0/16"); return ok })
	if !late.all()[k].(state.BestPathsChanged).Init {
		t.Errorf("the late watch's first paths: %+v, want the snapshot of generation 2", late.all()[k])
	}
	withdraw(t, p.b, "10.20.0.0/16")
	n := w.wait(t, j+1, "the withdrawal under generation 2", func(a state.Action) bool {
		paths, ok := bestOf(a, 2, "10.20.0.0/16")
		return ok && len(paths) == 1 && paths[0].Withdrawn
	})
	originate(t, p.b, "10.30.0.0/16")
	n = w.wait(t, n+1, "10.30.0.0/16 under generation 2", func(a state.Action) bool { _, ok := bestOf(a, 2, "10.30.0.0/16"); return ok })
	for x, a := range w.all()[m:] {
		if _, fact := factGen(a); !fact {
			t.Errorf("session action %d after the new generation of a running speaker: %+v", m+x, a)
		}
	}
	if eor > m {
		t.Errorf("End-of-RIB of generation 1 at %d, after the new generation at %d", eor, m)
	}

	// A stop: the session is reported idle, then nothing of that speaker.
	mb := p.b.events.mark()
	mustApply(t, p.a.Executor, effects.StopServer{Old: p.a.server(64512)})
	stopped := len(w.all())
	down := w.wait(t, n+1, "b idle at the stop", sessionOf(b, "idle"))
	// GoBGP's own idle (StopBgp deletes the neighbors) may come first;
	// otherwise the watch's "speaker stopped" does, before StopServer returns.
	if x := w.all()[down].(state.SessionStateChanged); x.Reason == "" || down >= stopped {
		t.Errorf("at the stop: %+v (fact %d of %d), want idle with a reason before StopServer returned", x, down, stopped)
	}
	if !p.b.events.waitUntil(establishTimeout, func() bool { return len(p.b.events.since(mb, p.a.addr)) > 0 }) {
		t.Fatalf("%s never saw the session with %s end", p.b.addr, p.a.addr)
	}
	if extra := w.all()[stopped:]; len(extra) > 0 {
		t.Errorf("actions of the stopped speaker: %+v", extra)
	}

	mustApply(t, p.a.Executor, effects.StartServer{Server: p.a.server(64512), Gen: 4}, effects.AddPeer{Neighbor: p.na, Gen: 2})
	s := w.wait(t, stopped, "initial snapshot of generation 4", func(a state.Action) bool { g, ok := factGen(a); return ok && g == 4 })
	if x, ok := w.all()[s].(state.BestPathsChanged); !ok || !x.Init || len(x.Prefixes) != 0 {
		t.Errorf("first fact of generation 4: %+v, want the empty initial snapshot", w.all()[s])
	}
	w.wait(t, stopped, "b established on the restarted speaker", sessionOf(b, "established"))
	awaitBest(t, w, s, p.b, p.nb, 4, "10.30.0.0/16")
	w.wait(t, s, "End-of-RIB from b of generation 4", func(a state.Action) bool {
		return a == state.Action(state.EndOfRIBReceived{Gen: 4, Neighbor: b, Family: "ipv4-unicast"})
	})
	p.waitEstablished(t) // both sides Established before the servers stop (GoBGP v4.8.0's race)
	for x, a := range w.all()[stopped:] {
		if g, fact := factGen(a); fact && g != 4 {
			t.Errorf("fact %d after the restart is of generation %d: %+v", stopped+x, g, a)
		}
	}
}
