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
	base := fullNeighbor()
	if !base.Equal(&base) {
		t.Fatal("a neighbor is not Equal to itself")
	}
	for _, f := range fieldcov.Of(base) {
		changed := fieldcov.Changed(base, f.Name)
		if base.Equal(&changed) || changed.Equal(&base) {
			t.Errorf("Neighbor.Equal ignores %s: compare it in Equal (state/neighbor.go)", f.Name)
		}
	}
}

func TestPolicyEqualCoversEveryField(t *testing.T) {
	base := fullNeighbor().Policy
	for _, f := range fieldcov.Of(base) {
		if base.Equal(fieldcov.Changed(base, f.Name)) {
			t.Errorf("Policy.Equal ignores %s: compare it in Policy.Equal (state/neighbor.go)", f.Name)
		}
	}
}

// bookkeeping are the fields SameConfig ignores: where a value came from,
// whose change alone needs no call to the speaker, and ReachableBy, whose
// route is a route table entry (docs/routes.md §9.7 rule 3) with its own
// generation and call.
var bookkeeping = map[string]bool{"Origin": true, "PasswordRef": true, "Filters": true, "ReachableBy": true}

func TestSameConfigIgnoresOnlyBookkeeping(t *testing.T) {
	base := fullNeighbor()
	seen := map[string]bool{}
	for _, f := range fieldcov.Of(base) {
		seen[f.Name] = true
		changed := fieldcov.Changed(base, f.Name)
		same := base.SameConfig(&changed)
		switch {
		case bookkeeping[f.Name] && !same:
			t.Errorf("SameConfig notices %s, a bookkeeping field", f.Name)
		case !bookkeeping[f.Name] && same:
			t.Errorf("SameConfig ignores %s: a field the speaker sees must count (or list it in bookkeeping, with why)", f.Name)
		}
	}
	for name := range bookkeeping {
		if !seen[name] {
			t.Errorf("bookkeeping names %s, which state.Neighbor no longer has", name)
		}
	}
}
