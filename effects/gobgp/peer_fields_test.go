package gobgp

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/peeragent/peeragent/internal/testrig/fieldcov"
	"github.com/peeragent/peeragent/state"
)

// notMapped are the fields of state.Neighbor that peerFor does not put in
// GoBGP's peer config, and why. Every other field must change what peerFor
// returns when it changes, or a setting would be computed and never reach
// the speaker. (This guard names no GoBGP type: it needs only peerFor and
// baseNeighbor, so it survives a GoBGP API version change unchanged.)
var notMapped = map[string]string{
	"Origin":      "bookkeeping: which source the neighbor came from",
	"PasswordRef": "bookkeeping: which Secret key the password came from",
	"Filters":     "bookkeeping: which BGPFilters the policy came from",
	"Policy":      "installed as the neighbor's own policy and defined sets (policy.go)",
	"ReachableBy": "a route table entry (docs/routes.md §9.7 rule 3), not a speaker setting",
	"Waiting":     "a waiting neighbor is never configured",
}

// validChange overrides fieldcov.Changed where peerFor accepts only some
// values: a cluster ID is an IPv4 address or a number.
var validChange = map[string]func(*state.Neighbor){
	"RouteReflectorClusterID": func(n *state.Neighbor) { n.RouteReflectorClusterID = "224.0.0.2" },
}

func TestPeerForCoversEveryNeighborField(t *testing.T) {
	base := *baseNeighbor()
	base.RouteReflectorClient, base.RouteReflectorClusterID = true, "224.0.0.1"
	base.Families = []string{"ipv4-unicast", "ipv6-unicast"}
	want, err := peerFor(&base)
	if err != nil {
		t.Fatalf("peerFor(base): %v", err)
	}
	seen := map[string]bool{}
	for _, f := range fieldcov.Of(base) {
		seen[f.Name] = true
		changed := fieldcov.Changed(base, f.Name)
		if edit, ok := validChange[f.Name]; ok {
			changed = base
			edit(&changed)
		}
		got, err := peerFor(&changed)
		switch _, exempt := notMapped[f.Name]; {
		case err != nil:
			t.Errorf("changing %s: peerFor: %v", f.Name, err)
		case exempt && !proto.Equal(want, got):
			t.Errorf("changing %s changes the GoBGP peer, yet notMapped says %q", f.Name, notMapped[f.Name])
		case !exempt && proto.Equal(want, got):
			t.Errorf("changing %s leaves the GoBGP peer as it was: map it in peerFor (peer.go) and add a TestPeerFor case, "+
				"or list it in notMapped with why", f.Name)
		}
	}
	for name := range notMapped {
		if !seen[name] {
			t.Errorf("notMapped names %s, which state.Neighbor no longer has", name)
		}
	}
}
