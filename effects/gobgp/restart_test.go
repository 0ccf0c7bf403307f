package gobgp

import (
	"net/netip"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// TestMarkRestarting: a neighbor announces a graceful restart only when
// the dataplane kept every unicast family it carries with graceful
// restart (docs/routes.md §9.6 rule 7).
func TestMarkRestarting(t *testing.T) {
	for _, tc := range []struct {
		name      string
		families  []string
		grSeconds uint32
		preserved []string
		want      bool
	}{
		{"ipv4-kept", []string{"ipv4-unicast"}, 120, []string{"ipv4-unicast"}, true},
		{"nothing-kept", []string{"ipv4-unicast"}, 120, nil, false},
		{"other-family-kept", []string{"ipv6-unicast"}, 120, []string{"ipv4-unicast"}, false},
		{"one-of-two-kept", []string{"ipv4-unicast", "ipv6-unicast"}, 120, []string{"ipv4-unicast"}, false},
		{"both-kept", []string{"ipv4-unicast", "ipv6-unicast"}, 120, []string{"ipv4-unicast", "ipv6-unicast"}, true},
		{"graceful-restart-off", []string{"ipv4-unicast"}, 0, []string{"ipv4-unicast"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &state.Neighbor{Address: netip.MustParseAddr("192.0.2.1"), PeerASN: 65001, LocalASN: 64512,
				Port: 179, Families: tc.families, GracefulRestartSeconds: tc.grSeconds}
			p, err := peerFor(n)
			if err != nil {
				t.Fatal(err)
			}
			markRestarting(p, tc.preserved)
			gr := p.GetGracefulRestart()
			if gr.GetLocalRestarting() != tc.want {
				t.Errorf("LocalRestarting %v, want %v", gr.GetLocalRestarting(), tc.want)
			}
			if tc.want && gr.GetDeferralTime() != selectionDeferralSeconds {
				t.Errorf("DeferralTime %d, want %d", gr.GetDeferralTime(), selectionDeferralSeconds)
			}
		})
	}
}
