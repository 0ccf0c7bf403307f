package gobgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// watchAll records everything Watch dispatches (sessions and learned
// paths, in the one order the watch gives them) until the test ends.
func watchAll(t *testing.T, sp *speaker) *learnedLog {
	t.Helper()
	l := newLearnedLog()
	watchFor(t, "Watch", func(ctx context.Context) error { return sp.Watch(ctx, l.add) })
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

// TestWatcherRebase: the re-basing of one watch on a new generation of
// its running server, event by event (no GoBGP): a new generation before
// GoBGP's snapshot came only stamps that snapshot; generation 0 is
// followed but not dispatched; a re-base is a snapshot of the sets held
// and of the End-of-RIBs of the sessions still up (one that went down
// since is left out, as GoBGP forgets it), then the stream goes on under
// the new generation; a stop reports the sessions not idle.
func TestWatcherRebase(t *testing.T) {
	e := New(Options{Now: func() time.Time { return time.Unix(100, 0) }})
	n1, n2 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	l := newLearnedLog()
	sub := &watcher{dispatch: l.add, wants: wantSessions | wantLearned, last: map[netip.Addr]string{}}
	st := &stream{gen: 0, init: true, cancel: func() {}}
	sub.st = st
	peer := func(a netip.Addr, s bgp.FSMState) {
		e.watches.onPeer(sub, st, &apiutil.WatchEventMessage_PeerEvent{Type: apiutil.PEER_EVENT_STATE,
			Peer: apiutil.Peer{State: apiutil.PeerState{NeighborAddress: a, SessionState: s}}})
	}
	path := func(from netip.Addr, prefix string) *apiutil.Path {
		nlri, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix(prefix))
		nh, _ := bgp.NewPathAttributeNextHop(from)
		return &apiutil.Path{Family: bgp.RF_IPv4_UC, Nlri: nlri, Attrs: []bgp.PathAttributeInterface{nh}, PeerAddress: from}
	}
	eor := func(from netip.Addr) { sub.onEor(st, &apiutil.Path{Family: bgp.RF_IPv4_UC, PeerAddress: from}) }

	sub.rebase(3) // before GoBGP's snapshot: it will carry 3
	peer(n1, bgp.BGP_FSM_ESTABLISHED)
	peer(n2, bgp.BGP_FSM_ESTABLISHED)
	sub.onBest(st, nil) // the (empty) snapshot
	sub.onBest(st, []*apiutil.Path{path(n1, "10.1.0.0/16")})
	sub.onBest(st, []*apiutil.Path{path(n2, "10.2.0.0/16")})
	eor(n1)
	eor(n2)
	peer(n2, bgp.BGP_FSM_IDLE) // n2's End-of-RIB is gone with its session
	sub.rebase(4)
	sub.onBest(st, []*apiutil.Path{path(n1, "10.3.0.0/16")})
	e.watches.subs = map[*watcher]bool{sub: true}
	e.watches.detach()

	var got []string
	for _, a := range l.all() {
		switch x := a.(type) {
		case state.BestPathsChanged:
			var ps []string
			for _, p := range x.Prefixes {
				ps = append(ps, p.Prefix.String())
			}
			got = append(got, fmt.Sprintf("best gen=%d init=%v %v", x.Gen, x.Init, ps))
		case state.EndOfRIBReceived:
			got = append(got, fmt.Sprintf("eor gen=%d %s", x.Gen, x.Neighbor))
		case state.SessionStateChanged:
			got = append(got, fmt.Sprintf("session %s %s %s", x.Address, x.State, x.Reason))
		}
	}
	want := []string{
		"session 192.0.2.1 established ",
		"session 192.0.2.2 established ",
		"best gen=3 init=true []",
		"best gen=3 init=false [10.1.0.0/16]",
		"best gen=3 init=false [10.2.0.0/16]",
		"eor gen=3 192.0.2.1",
		"eor gen=3 192.0.2.2",
		"session 192.0.2.2 idle peer deconfigured",
		"best gen=4 init=true [10.1.0.0/16 10.2.0.0/16]",
		"eor gen=4 192.0.2.1",
		"best gen=4 init=false [10.3.0.0/16]",
		"session 192.0.2.1 idle speaker stopped",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dispatched (-want +got):\n%s", diff)
	}
	sub.onBest(st, []*apiutil.Path{path(n1, "10.4.0.0/16")})
	if n := len(l.all()); n != len(want) {
		t.Errorf("%d actions after the stop, want none", n-len(want))
	}
}

// TestWatcherGenerationZero: a server of generation 0 is followed (its
// sessions reported) but none of its learned facts is dispatched until a
// generation is given, which is then a snapshot of what it holds.
func TestWatcherGenerationZero(t *testing.T) {
	n1 := netip.MustParseAddr("192.0.2.1")
	l := newLearnedLog()
	sub := &watcher{dispatch: l.add, wants: wantLearned, last: map[netip.Addr]string{}}
	st := &stream{init: true, cancel: func() {}}
	sub.st = st
	nlri, _ := bgp.NewIPAddrPrefix(netip.MustParsePrefix("10.1.0.0/16"))
	nh, _ := bgp.NewPathAttributeNextHop(n1)
	sub.onBest(st, nil)
	sub.onBest(st, []*apiutil.Path{{Family: bgp.RF_IPv4_UC, Nlri: nlri, Attrs: []bgp.PathAttributeInterface{nh}, PeerAddress: n1}})
	sub.onEor(st, &apiutil.Path{Family: bgp.RF_IPv4_UC, PeerAddress: n1})
	if acts := l.all(); len(acts) != 0 {
		t.Fatalf("generation 0 dispatched %+v", acts)
	}
	sub.rebase(7)
	want := []state.Action{
		state.BestPathsChanged{Gen: 7, Init: true, Prefixes: []state.BestPaths{{Prefix: netip.MustParsePrefix("10.1.0.0/16"),
			Paths: []state.LearnedPath{{NextHops: []netip.Addr{n1}, Neighbor: n1}}}}},
		state.EndOfRIBReceived{Gen: 7, Neighbor: n1, Family: "ipv4-unicast"},
	}
	if diff := cmp.Diff(want, l.all(), cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
		cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("after generation 7 (-want +got):\n%s", diff)
	}
}
