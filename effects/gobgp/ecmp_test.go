package gobgp

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// TestECMPThreeSpeakers: a (AS 64512) peers with b (AS 64513) and c (AS
// 64514), which both originate the same prefix with equal attributes. With
// multipath on, GoBGP sends a's watch only the path that joins or leaves
// the equal-best set; WatchLearned still reports the prefix's whole set:
// both next hops, then c's alone once b withdraws it. The reducer routes
// the prefix via both (docs/routes.md §9.1 rule 1, §9.4).
func TestECMPThreeSpeakers(t *testing.T) {
	const prefix = "10.40.0.0/24"
	requireLoopback(t, "127.0.0.2", "127.0.0.3")
	a, b, c := newSpeaker(t, "127.0.0.1"), newSpeaker(t, "127.0.0.2"), newSpeaker(t, "127.0.0.3")
	ab, ac := neighborOf(a, b, 64512, 64513), neighborOf(a, c, 64512, 64514)
	ab.Passive, ac.Passive = true, true
	la := watchLearned(t, a)
	// Every server starts before any path moves (GoBGP v4.8.0's StartBgp
	// writes package globals that path processing reads).
	// So the three start first, and only then get their peers: a session
	// coming up reads those globals (getBestFromLocal) while a later
	// StartBgp would write them (seen once in 20 -race runs).
	mustApply(t, a.Executor, effects.StartServer{Server: a.server(64512), Gen: 1})
	mustApply(t, b.Executor, effects.StartServer{Server: b.server(64513), Gen: 1})
	mustApply(t, c.Executor, effects.StartServer{Server: c.server(64514), Gen: 1})
	mustApply(t, a.Executor, effects.AddPeer{Neighbor: ab, Gen: 1}, effects.AddPeer{Neighbor: ac, Gen: 1})
	mustApply(t, b.Executor, effects.AddPeer{Neighbor: neighborOf(b, a, 64513, 64512), Gen: 1})
	mustApply(t, c.Executor, effects.AddPeer{Neighbor: neighborOf(c, a, 64514, 64512), Gen: 1})
	established := func() {
		t.Helper()
		a.events.waitState(t, b.addr, "established", establishTimeout)
		a.events.waitState(t, c.addr, "established", establishTimeout)
		b.events.waitState(t, a.addr, "established", establishTimeout)
		c.events.waitState(t, a.addr, "established", establishTimeout)
	}
	established()
	na, nb := netip.MustParseAddr(b.addr), netip.MustParseAddr(c.addr)

	// hops is the non-withdrawn next hops of prefix in a, sorted; ok if listed.
	hops := func(a state.Action) ([]netip.Addr, bool) {
		paths, ok := bestOf(a, 1, prefix)
		var out []netip.Addr
		for _, p := range paths {
			if !p.Withdrawn && !p.Local {
				out = append(out, p.NextHops...)
			}
		}
		slices.SortFunc(out, netip.Addr.Compare)
		return out, ok
	}
	originate(t, b, prefix)
	originate(t, c, prefix)
	both := []netip.Addr{na, nb}
	i := la.wait(t, 0, prefix+" via both b and c", func(x state.Action) bool {
		h, ok := hops(x)
		return ok && slices.Equal(h, both)
	})
	for _, x := range la.all()[:i] {
		if h, ok := hops(x); ok && len(h) == 0 {
			t.Errorf("before both: %+v lists %s with no next hop", x, prefix)
		}
	}

	// The reducer, fed what the watch dispatched, routes the prefix via both.
	s := learnedState(t, la.all()[:i+1])
	var r *state.TableRoute
	s.Out.Routes.Range(func(_ string, x *state.TableRoute) bool {
		if x.Prefix.String() == prefix {
			r = x
			return false
		}
		return true
	})
	if r == nil || r.Origin != "learned" || !slices.Equal(r.Via, both) {
		t.Errorf("the reducer's route %s: %+v, want learned via %v", prefix, r, both)
	}

	withdraw(t, b, prefix)
	j := la.wait(t, i+1, prefix+" via c alone", func(x state.Action) bool {
		h, ok := hops(x)
		return ok && slices.Equal(h, []netip.Addr{nb})
	})
	for _, x := range la.all()[i+1 : j] {
		if h, ok := hops(x); ok {
			t.Errorf("between both and c alone: %+v lists %s via %v", x, prefix, h)
		}
	}
	t.Logf("a's facts:\n%s", la.describe())
	established() // both sides up before the servers stop (GoBGP v4.8.0's race)
}

// learnedState is the reducer's State of a node whose speaker dispatched
// acts (their generation taken as the State's).
func learnedState(t *testing.T, acts []state.Action) state.State {
	t.Helper()
	meshOff := false
	s := state.New(ourNode, state.Options{})
	for _, a := range []state.Action{
		state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{{Name: ourNode, IPv4Address: "127.0.0.1/8"}}},
		state.SourceSynced{Kind: state.KindBGPConfiguration, Configs: []state.BGPConfiguration{{Name: "default", NodeToNodeMeshEnabled: &meshOff}}},
		state.SourceSynced{Kind: state.KindBGPFilter},
		state.SourceSynced{Kind: state.KindBGPPeer},
		state.SourceSynced{Kind: state.KindIPPool},
		state.SourceSynced{Kind: state.KindBlockAffinity},
		state.SourceSynced{Kind: state.KindPod},
		state.RoutesListed{Dataplane: "none"},
	} {
		s = reducer.Reduce(s, a)
	}
	if s.Routing.SpeakerGen == 0 {
		t.Fatalf("the reducer has no speaker: %+v", s.Routing)
	}
	for _, a := range acts {
		if x, ok := a.(state.BestPathsChanged); ok {
			x.Gen = s.Routing.SpeakerGen
			s = reducer.Reduce(s, x)
		}
	}
	return s
}
