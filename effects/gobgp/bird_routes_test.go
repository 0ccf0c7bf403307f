package gobgp

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/peeragent/peeragent/effects"
	birdtest "github.com/peeragent/peeragent/internal/testrig/bird"
	"github.com/peeragent/peeragent/state"
)

// Routes at a BIRD peer. These tests put a path in the speaker's RIB
// themselves (announce), with the speaker's own address as next hop; what
// is under test is what the executor and GoBGP v4 do with it: export
// policy changes and restarts. bird_paths_test.go has the agent originate
// its own block.

const exportedPrefix = "10.99.1.0/26"

// announce originates prefix from our speaker, next hop ourAddr.
func announce(t *testing.T, sp *speaker, prefix string) {
	t.Helper()
	nlri, err := bgp.NewIPAddrPrefix(netip.MustParsePrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	nh, err := bgp.NewPathAttributeNextHop(netip.MustParseAddr(ourAddr))
	if err != nil {
		t.Fatal(err)
	}
	p := &apiutil.Path{Family: bgp.RF_IPv4_UC, Nlri: nlri, Attrs: []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), nh}}
	if _, err := sp.Speaker().AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{p}}); err != nil {
		t.Fatalf("add path %s: %v", prefix, err)
	}
}

// birdChannel waits until BIRD's ipv4 channel toward us satisfies ok and
// returns the protocol.
func (r *birdRig) birdChannel(t *testing.T, what string, ok func(birdtest.ProtocolState, birdtest.ChannelState) bool) birdtest.ProtocolState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), establishTimeout)
	defer cancel()
	p, err := r.bird.WaitProtocol(ctx, birdProto, func(p birdtest.ProtocolState) bool { return ok(p, p.Channels["ipv4"]) })
	if err != nil {
		t.Fatalf("BIRD never had %s: %v; ours: %s", what, err, r.describe())
	}
	return p
}

// TestBirdExportNarrowingWithdraws: a BGPFilter export rule that rejects an
// exported route makes BIRD drop it while its session stays the same one
// (GoBGP v4.6+ withdraws on a soft reset out what the narrowed policy
// refuses; v3 left it at the peer); removing the rule brings it back, on
// the same session again.
func TestBirdExportNarrowingWithdraws(t *testing.T) {
	r := newBirdRig(t, "127.0.0.36", "", false)
	r.waitEstablished(t)
	announce(t, r.sp, exportedPrefix)
	before := r.birdChannel(t, "our route", func(_ birdtest.ProtocolState, c birdtest.ChannelState) bool { return c.Imported == 1 })
	n0 := r.bird.Establishments(birdProto)

	filter := state.BGPFilter{Name: "no-test-route", ExportV4: []state.FilterRule{
		{CIDR: "10.99.0.0/16", MatchOperator: "In", Action: "Reject"},
	}}
	r.ag.dispatch(t, state.FilterUpserted{Filter: filter})
	peer := r.inputs(false)[3].(state.SourceSynced).Peers[0]
	peer.Filters = []string{filter.Name}
	effs := r.ag.dispatch(t, state.PeerUpserted{Peer: peer})
	if len(effs) != 1 {
		t.Fatalf("attaching the filter: %v, want one set-policy", effs)
	}
	if _, ok := effs[0].(effects.SetPolicy); !ok {
		t.Fatalf("attaching the filter: %s, want set-policy", effs[0])
	}
	narrowed := r.birdChannel(t, "the route withdrawn", func(_ birdtest.ProtocolState, c birdtest.ChannelState) bool {
		return c.Imported == 0 && c.ImportWithdraws.Received >= 1
	})

	peer.Filters = nil
	r.ag.dispatch(t, state.PeerUpserted{Peer: peer})
	widened := r.birdChannel(t, "the route back", func(_ birdtest.ProtocolState, c birdtest.ChannelState) bool { return c.Imported == 1 })
	r.noReset(t, before, n0, narrowed, widened)
	c := widened.Channels["ipv4"]
	t.Logf("BIRD ipv4 channel: imported %d, import updates %+v, import withdraws %+v; session since %s",
		c.Imported, c.ImportUpdates, c.ImportWithdraws, widened.SinceText)
}

// TestBirdGracefulStopKeepsRoutes: with graceful restart negotiated, a
// graceful stop (what SIGTERM does with --shutdown graceful) ends the
// session without a NOTIFICATION, and BIRD keeps our route, marked stale,
// while we are away; when our speaker is back and sends the route and its
// End-of-RIB, BIRD has it fresh, and at no point was it withdrawn.
//
// A hard stop is not contrasted here: GoBGP v4.8.0's StopBgp hands the
// Cease to the session's goroutine and closes the connection without
// waiting for it to be written (pkg/server/server.go, deleteNeighbor then
// stopNeighbor), so a graceful-restart peer sometimes sees only the TCP
// close and keeps the routes anyway (seen once in 20 runs).
func TestBirdGracefulStopKeepsRoutes(t *testing.T) {
	r := newBirdRig(t, "127.0.0.37", "", false)
	r.waitEstablished(t)
	announce(t, r.sp, exportedPrefix)
	r.birdChannel(t, "our route", func(_ birdtest.ProtocolState, c birdtest.ChannelState) bool { return c.Imported == 1 })
	s := r.session()
	nb := s.Applied

	r.sp.graceful = true
	if err := r.sp.Close(); err != nil {
		t.Fatal(err)
	}
	away := r.birdChannel(t, "the session down", func(p birdtest.ProtocolState, _ birdtest.ChannelState) bool { return !p.Established() })
	stale, err := r.bird.Exec("show", "route", exportedPrefix, "all")
	if err != nil {
		t.Fatal(err)
	}
	if c := away.Channels["ipv4"]; c.ImportWithdraws.Received != 0 {
		t.Errorf("BIRD received a withdrawal on a graceful stop: %+v", c.ImportWithdraws)
	}
	// BIRD 2.0.12 does not print a stale mark; the route being there while
	// the session is down, after "Neighbor graceful restart detected", is it.
	if !strings.Contains(stale, exportedPrefix) || !strings.Contains(r.bird.Log(), "Neighbor graceful restart detected") {
		t.Errorf("BIRD did not keep our route while we were away:\n%s\nprotocol: %s", stale, away)
	}
	updates0 := away.Channels["ipv4"].ImportUpdates.Received
	t.Logf("BIRD while we are away: %s\n%s", away, stale)

	mustApply(t, r.sp.Executor, effects.StartServer{Server: r.sp.server(ourAS)}, effects.AddPeer{Neighbor: nb, Gen: s.Gen})
	announce(t, r.sp, exportedPrefix)
	back := r.birdChannel(t, "our route fresh again", func(p birdtest.ProtocolState, c birdtest.ChannelState) bool {
		return p.Established() && c.Imported == 1
	})
	if !pollUntil(establishTimeout, func() bool { return strings.Contains(r.bird.Log(), "Neighbor graceful restart done") }) {
		t.Errorf("BIRD never ended the graceful restart (our End-of-RIB):\n%s", r.bird.Log())
	}
	back = r.birdChannel(t, "our route refreshed", func(p birdtest.ProtocolState, c birdtest.ChannelState) bool {
		return p.Established() && c.Imported == 1 && c.ImportUpdates.Received > updates0
	})
	if c := back.Channels["ipv4"]; c.ImportWithdraws.Received != 0 {
		t.Errorf("BIRD received a withdrawal across the graceful restart: %+v", c.ImportWithdraws)
	}
	t.Logf("BIRD after we are back: %s; ipv4 %+v", back, back.Channels["ipv4"])

}
