package gobgp

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/internal/testrig/frr"
	"github.com/peeragent/peeragent/state"
)

// TestFRRReceivesOwnIPv6Block drives the whole chain, reducer, Diff and
// executor, against FRR as an eBGP ToR over IPv6 on ::1 (docs/routes.md
// §8.1 rule 1, §8.2 rule 1): FRR receives the node's confirmed IPv6 block
// in IPv6 unicast with our next hop and the configured community. The
// BGPPeer has sourceAddress None, as both speakers share ::1 and the
// node's IPv6 address is not a local one.
func TestFRRReceivesOwnIPv6Block(t *testing.T) {
	frr.Require(t)
	requireLoopback(t, ourAddr)
	lo6 := netip.MustParseAddr("::1")
	const nodeV6, block, frrAS = "fd00:1::a", "fd00:244:0:1::/64", 65040
	sp := newSpeakerOn(t, ourAddr, ourAddr, lo6.String())
	frrPort := frr.FreePort(t, lo6)
	peer := frr.Start(t, frr.Config{RouterID: netip.MustParseAddr("127.0.0.40"), Address: lo6, Port: frrPort, AS: frrAS,
		Neighbors: []frr.Neighbor{{Name: "agent", Address: lo6, Port: int(sp.port), AS: ourAS}}})

	ag := newBirdAgent(t, sp)
	meshOff := false
	for _, a := range []state.Action{
		state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{{Name: ourNode, IPv4Address: ourAddr + "/8", IPv6Address: nodeV6 + "/64"}}},
		state.SourceSynced{Kind: state.KindBGPConfiguration, Configs: []state.BGPConfiguration{
			{Name: "default", NodeToNodeMeshEnabled: &meshOff, PrefixAdvertisements: &[]state.PrefixAdvertisement{
				{CIDR: "fd00:244::/48", Communities: []string{"65000:106"}}}},
			{Name: "node." + ourNode, ListenPort: int32(sp.port)},
		}},
		state.SourceSynced{Kind: state.KindBGPFilter},
		state.SourceSynced{Kind: state.KindBGPPeer, Peers: []state.BGPPeer{{Name: "frr6", Node: ourNode,
			PeerIP: netip.AddrPortFrom(lo6, uint16(frrPort)).String(), ASNumber: frrAS, SourceAddress: "None"}}},
		state.SourceSynced{Kind: state.KindIPPool, Pools: []state.IPPool{{Name: "v6-pool", CIDR: "fd00:244::/48"}}},
		state.SourceSynced{Kind: state.KindBlockAffinity, Affinities: []state.BlockAffinity{
			{Name: "node-a-v6-block", Node: ourNode, CIDR: block, State: "confirmed"}}},
		state.SourceSynced{Kind: state.KindPod},
	} {
		ag.dispatch(t, a)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), establishTimeout)
	defer wcancel()
	if _, err := peer.WaitEstablished(wctx, lo6); err != nil {
		t.Fatalf("FRR never established with us: %v\nagent steps:\n%s", err, strings.Join(ag.steps(), "\n"))
	}
	var route frr.Route
	var out string
	var err error
	ok := pollUntil(establishTimeout, func() bool {
		route, out, err = peer.Route(netip.MustParsePrefix(block))
		return strings.Contains(out, `"nexthops"`)
	})
	if !ok {
		t.Fatalf("FRR never received %s:\n%s", block, out)
	}
	if err != nil || len(route.Paths) != 1 {
		t.Fatalf("FRR's route %s: %v:\n%s", block, err, out)
	}
	p := route.Paths[0]
	if route.Prefix != block || len(p.Nexthops) == 0 || p.Nexthops[0].IP != nodeV6 || p.Community.String != "65000:106" {
		t.Errorf("FRR's route is %s via %+v community %q, want %s via %s community 65000:106", route.Prefix, p.Nexthops, p.Community.String, block, nodeV6)
	}
	text, _ := peer.Exec("show bgp ipv6 unicast " + block)
	t.Logf("FRR has our IPv6 block:\n%s", text)
}

// TestFRRIPv6GlobalAndLinkLocalNextHop is docs/routes.md appendix A
// scenario 37 at the speaker: FRR (eBGP over ::1) sends an IPv6 route with
// an outbound route-map setting a global and a link-local next hop.
// bgpd 8.4 puts both on the wire even without zebra (a packet capture on
// a veth with this route-map shows them), but GoBGP v4.8.0 keeps only the
// global next hop of a received MP_REACH_NLRI (§9.1 rule 2), so the
// speaker reports that one alone; the test takes either form: the global
// next hop first, the link-local one (if kept) after it, the reducer's route via the global one only (§9.2 rule 2; the
// two-next-hop input is golden routes-learned-ipv6-link-local), and the
// first session still up.
func TestFRRIPv6GlobalAndLinkLocalNextHop(t *testing.T) {
	frr.Require(t)
	requireLoopback(t, ourAddr)
	lo6 := netip.MustParseAddr("::1")
	const nodeV6, prefix, global, linkLocal, frrAS = "fd00:1::a", "fd00:99::/64", "fd00:1::99", "fe80::99", 65041
	sp := newSpeakerOn(t, ourAddr, ourAddr, lo6.String())
	frrPort := frr.FreePort(t, lo6)
	peer := frr.Start(t, frr.Config{RouterID: netip.MustParseAddr("127.0.0.41"), Address: lo6, Port: frrPort, AS: frrAS,
		Neighbors: []frr.Neighbor{{Name: "agent", Address: lo6, Port: int(sp.port), AS: ourAS, AFExtra: []string{"route-map NH6 out"}}},
		Announce:  []netip.Prefix{netip.MustParsePrefix(prefix)},
		Raw:       []string{"route-map NH6 permit 10", " set ipv6 next-hop global " + global, " set ipv6 next-hop local " + linkLocal}})

	ag := newBirdAgent(t, sp)
	learned := watchLearned(t, sp)
	learned.forward(func(a state.Action) {
		select {
		case ag.in <- birdRequest{a: a}:
		case <-ag.stop:
		}
	})
	meshOff := false
	for _, a := range []state.Action{
		state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{{Name: ourNode, IPv4Address: ourAddr + "/8", IPv6Address: nodeV6 + "/64"}}},
		state.SourceSynced{Kind: state.KindBGPConfiguration, Configs: []state.BGPConfiguration{
			{Name: "default", NodeToNodeMeshEnabled: &meshOff},
			{Name: "node." + ourNode, ListenPort: int32(sp.port)},
		}},
		state.SourceSynced{Kind: state.KindBGPFilter},
		state.SourceSynced{Kind: state.KindBGPPeer, Peers: []state.BGPPeer{{Name: "frr6", Node: ourNode,
			PeerIP: netip.AddrPortFrom(lo6, uint16(frrPort)).String(), ASNumber: frrAS, SourceAddress: "None"}}},
		state.SourceSynced{Kind: state.KindIPPool},
		state.SourceSynced{Kind: state.KindBlockAffinity},
		state.SourceSynced{Kind: state.KindPod},
	} {
		ag.dispatch(t, a)
	}
	i := learned.wait(t, 0, "best path "+prefix, func(a state.Action) bool {
		paths, ok := bestOf(a, ag.state().Routing.SpeakerGen, prefix)
		return ok && len(paths) == 1 && !paths[0].Withdrawn
	})
	paths, _ := bestOf(learned.all()[i], ag.state().Routing.SpeakerGen, prefix)
	want := []netip.Addr{netip.MustParseAddr(global), netip.MustParseAddr(linkLocal)}
	if nh := paths[0].NextHops; (!slices.Equal(nh, want) && !slices.Equal(nh, want[:1])) || paths[0].Neighbor != lo6 {
		t.Errorf("FRR's path of %s: next hops %v from %v, want %v (or its first) from %v", prefix, nh, paths[0].Neighbor, want, lo6)
	}
	var r *state.TableRoute
	if !pollUntil(establishTimeout, func() bool {
		r = ag.route(prefix)
		return r != nil && r.Origin == "learned" && len(r.Via) > 0
	}) {
		t.Fatalf("the reducer has no learned route %s: %+v", prefix, r)
	}
	if !slices.Equal(r.Via, want[:1]) {
		t.Errorf("route %s via %v, want via the global next hop only (%s)", prefix, r.Via, global)
	}
	if n, err := peer.Neighbor(lo6); err != nil || !n.Established() || n.ConnectionsEstablished != 1 {
		t.Errorf("FRR's session after the route: %+v (%v), want the first one still Established", n, err)
	}
	t.Logf("FRR sent %s with next hops %v; the agent routes it via %v", prefix, paths[0].NextHops, r.Via)
}

// state is a copy of the agent's State.
func (ag *birdAgent) state() state.State {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	return ag.s
}

// route is the agent's route-table entry for prefix, if any.
func (ag *birdAgent) route(prefix string) *state.TableRoute {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	var found *state.TableRoute
	ag.s.Out.Routes.Range(func(_ string, r *state.TableRoute) bool {
		if r.Prefix.String() == prefix {
			c := *r
			found = &c
			return false
		}
		return true
	})
	return found
}
