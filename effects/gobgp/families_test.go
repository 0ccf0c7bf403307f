package gobgp

import (
	"context"
	"strings"
	"testing"

	api "github.com/osrg/gobgp/v4/api"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// TestRIBFamilies: with Options.Families the speaker's RIB has a table of
// those families only (not one of each of GoBGP's 26), and a neighbor
// given another family is refused rather than configured with a family
// whose paths GoBGP would drop.
func TestRIBFamilies(t *testing.T) {
	sp := newSpeaker(t, "127.0.0.1")
	sp.families = []string{"ipv4-unicast", "ipv6-unicast"}
	mustApply(t, sp.Executor, effects.StartServer{Server: sp.server(64512)})
	ctx := context.Background()
	for _, tc := range []struct {
		fam *api.Family
		ok  bool
	}{
		{&api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}, true},
		{&api.Family{Afi: api.Family_AFI_IP6, Safi: api.Family_SAFI_UNICAST}, true},
		{&api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_MPLS_VPN}, false},
		{&api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_SR_POLICY}, false},
	} {
		_, err := sp.bgp.GetTable(ctx, &api.GetTableRequest{TableType: api.TableType_TABLE_TYPE_GLOBAL, Family: tc.fam})
		if (err == nil) != tc.ok {
			t.Errorf("global table of %v: %v, want a table: %v", tc.fam, err, tc.ok)
		}
	}
	bad, good := passiveNeighbor("10.0.0.2", 64513), passiveNeighbor("10.0.0.3", 64513)
	bad.Families = []string{"ipv4-unicast", "ipv4-srpolicy"}
	res := sp.Execute(ctx, []effects.Effect{effects.AddPeer{Neighbor: bad, Gen: 1}, effects.AddPeer{Neighbor: good, Gen: 2}})
	if len(res) != 2 {
		t.Fatalf("results: %v", res)
	}
	f, ok := res[0].(state.PeerApplyFailed)
	if !ok || !strings.Contains(f.Error, "address family ipv4-srpolicy is not in the speaker's RIB (ipv4-unicast, ipv6-unicast)") {
		t.Errorf("neighbor with ipv4-srpolicy: %v, want refused", res[0])
	}
	if _, ok := res[1].(state.PeerApplied); !ok {
		t.Errorf("neighbor with ipv4-unicast: %v, want applied", res[1])
	}
	if _, ok, _ := sp.currentPeer(ctx, bad.Address); ok {
		t.Errorf("the neighbor refused was configured anyway")
	}
}

// TestRIBFamiliesDefault: without Options.Families GoBGP's RIB has every
// family, as before.
func TestRIBFamiliesDefault(t *testing.T) {
	sp := newSpeaker(t, "127.0.0.1")
	mustApply(t, sp.Executor, effects.StartServer{Server: sp.server(64512)})
	_, err := sp.bgp.GetTable(context.Background(), &api.GetTableRequest{TableType: api.TableType_TABLE_TYPE_GLOBAL,
		Family: &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_SR_POLICY}})
	if err != nil {
		t.Errorf("global table of ipv4-srpolicy: %v", err)
	}
}
