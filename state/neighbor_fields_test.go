package state_test

import (
	"net/netip"
	"testing"

	"github.com/peeragent/peeragent/internal/testrig/fieldcov"
	"github.com/peeragent/peeragent/state"
)

// The field-coverage guards of state.Neighbor's hand-written comparisons:
// a field added to the struct and forgotten in Equal would make the
// reducer keep the old neighbor and Diff emit nothing (docs/design.md,
// "Adding a setting").

// fullNeighbor has a non-zero value in every field, so a change to any of
// them is a change from something.
func fullNeighbor() state.Neighbor {
	return state.Neighbor{
		Address: netip.MustParseAddr("10.0.0.2"), Port: 179, PeerASN: 65001, LocalASN: 64512,
		Origin: "bgppeer/tor", Passive: true, Password: state.NewPassword("pw"),
		PasswordRef:   &state.SecretKeyRef{Name: "s", Key: "k"},
		SourceAddress: netip.MustParseAddr("10.0.0.1"), TTLMin: 254, EBGPMultihopTTL: 2,
		GracefulRestartSeconds: 120, KeepaliveSeconds: 10, AllowOwnASN: 1, RouteReflectorClient: true,
		RouteReflectorClusterID: "224.0.0.1", Families: []string{"ipv4-unicast", "ipv6-unicast"},
		Filters: []string{"f1", "f2"}, Policy: state.Policy{NextHop: "self",
			Import: []state.Rule{{Filter: "f1", Action: "accept"}}, Export: []state.Rule{{Filter: "f2", Action: "reject"}}},
		ReachableBy: netip.MustParseAddr("10.0.0.254"), Waiting: "secret s key k",
	}
}

func TestNeighborEqualCoversEveryField(t *testing.T) {
	fieldcov.Equal(t, fullNeighbor(), (*state.Neighbor).Equal, "state/neighbor.go")
}

func TestPolicyEqualCoversEveryField(t *testing.T) {
	fieldcov.Equal(t, fullNeighbor().Policy, func(a, b *state.Policy) bool { return a.Equal(*b) }, "state/neighbor.go")
}

// bookkeeping are the fields SameConfig ignores, with why: whose change
// alone needs no call to the speaker.
var bookkeeping = map[string]string{
	"Origin":      "where the neighbor came from",
	"PasswordRef": "which Secret key the password came from",
	"Filters":     "which BGPFilters the policy came from",
	"ReachableBy": "its route is a route table entry (docs/routes.md §9.7 rule 3) with its own generation and call",
}

func TestSameConfigIgnoresOnlyBookkeeping(t *testing.T) {
	base := fullNeighbor()
	fieldcov.Ignores(t, base, bookkeeping, "SameConfig", "a field the speaker sees must count (state/neighbor.go)",
		func(changed state.Neighbor) bool { return !base.SameConfig(&changed) })
}
