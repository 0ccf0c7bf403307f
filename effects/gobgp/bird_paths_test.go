package gobgp

import (
	"strings"
	"testing"

	birdtest "github.com/peeragent/peeragent/internal/testrig/bird"
	"github.com/peeragent/peeragent/state"
)

// TestBirdReceivesOwnBlock drives the whole chain, reducer, Diff and
// executor, against BIRD 2 as an eBGP ToR (docs/routes.md appendix A
// scenario 36): BIRD receives the node's confirmed block with next hop the
// node's address and the configured standard and large communities
// (docs/routes.md §8.2, §8.5); a BGPFilter export reject withdraws it
// without a session reset (§8.3 rules 2, 13); removing the rule brings it
// back, and a disableBGPExport pool withdraws it again by a delete-path
// (§8.1 rule 6), the session still the same one.
func TestBirdReceivesOwnBlock(t *testing.T) {
	r := newBirdRig(t, "127.0.0.38", "", false)
	r.waitEstablished(t)
	const block = "10.244.1.0/26"
	pool := state.IPPool{Name: "default-pool", CIDR: "10.244.0.0/16"}
	r.ag.dispatch(t, state.IPPoolUpserted{Pool: pool})
	meshOff := false
	r.ag.dispatch(t, state.ConfigUpserted{Config: state.BGPConfiguration{Name: "default", NodeToNodeMeshEnabled: &meshOff,
		Communities:          []state.Community{{Name: "rack", Value: "65000:0:7"}},
		PrefixAdvertisements: &[]state.PrefixAdvertisement{{CIDR: "10.244.0.0/16", Communities: []string{"65000:100", "rack"}}}}})
	r.ag.dispatch(t, state.BlockAffinityUpserted{Affinity: state.BlockAffinity{Name: "node-a-block", Node: ourNode, CIDR: block, State: "confirmed"}})
	before := r.birdChannel(t, "our block", func(_ birdtest.ProtocolState, c birdtest.ChannelState) bool { return c.Imported == 1 })
	n0 := r.bird.Establishments(birdProto)
	route, err := r.bird.Exec("show", "route", block, "all")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{block, "BGP.next_hop: " + ourAddr, "BGP.community: (65000,100)", "BGP.large_community: (65000, 0, 7)"} {
		if !strings.Contains(route, want) {
			t.Errorf("BIRD's route lacks %q:\n%s", want, route)
		}
	}
	t.Logf("BIRD has our block:\n%s", route)

	filter := state.BGPFilter{Name: "no-pods", ExportV4: []state.FilterRule{{CIDR: "10.244.0.0/16", MatchOperator: "In", Action: "Reject"}}}
	r.ag.dispatch(t, state.FilterUpserted{Filter: filter})
	peer := r.inputs(false)[3].(state.SourceSynced).Peers[0]
	peer.Filters = []string{filter.Name}
	r.ag.dispatch(t, state.PeerUpserted{Peer: peer})
	narrowed := r.birdChannel(t, "the block withdrawn by the filter", func(_ birdtest.ProtocolState, c birdtest.ChannelState) bool {
		return c.Imported == 0 && c.ImportWithdraws.Received >= 1
	})
	peer.Filters = nil
	r.ag.dispatch(t, state.PeerUpserted{Peer: peer})
	r.birdChannel(t, "the block back", func(_ birdtest.ProtocolState, c birdtest.ChannelState) bool { return c.Imported == 1 })

	pool.DisableBGPExport = true
	r.ag.dispatch(t, state.IPPoolUpserted{Pool: pool})
	quiet := r.birdChannel(t, "the block withdrawn by disableBGPExport", func(_ birdtest.ProtocolState, c birdtest.ChannelState) bool {
		return c.Imported == 0 && c.ImportWithdraws.Received >= 2
	})
	r.noReset(t, before, n0, narrowed, quiet)
	c := quiet.Channels["ipv4"]
	t.Logf("BIRD ipv4 channel at the end: imported %d, import updates %+v, import withdraws %+v", c.Imported, c.ImportUpdates, c.ImportWithdraws)
}
