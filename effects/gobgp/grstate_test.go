package gobgp

import (
	"net/netip"
	"testing"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// TestGRBookMarksSessionsOnOldState: a session whose OPEN lists fewer
// graceful-restart families than an earlier session of the same
// configured peer ran on GoBGP's left-over state (docs/routes.md §9.5
// rule 3); reported once when it ends, forgotten when the peer is
// configured anew.
func TestGRBookMarksSessionsOnOldState(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.1")
	v4 := bgp.NewCapGracefulRestartTuple(bgp.RF_IPv4_UC, false)
	v6 := bgp.NewCapGracefulRestartTuple(bgp.RF_IPv6_UC, false)
	gr := func(ts ...*bgp.CapGracefulRestartTuple) []bgp.ParameterCapabilityInterface {
		return []bgp.ParameterCapabilityInterface{bgp.NewCapGracefulRestart(false, true, 30, ts)}
	}
	none := []bgp.ParameterCapabilityInterface{bgp.NewCapFourOctetASNumber(65001)}
	steps := []struct {
		name string
		caps []bgp.ParameterCapabilityInterface
		want bool
	}{
		{"first-without", none, false},
		{"with-ipv4", gr(v4), false},
		{"with-ipv4-again", gr(v4), false},
		{"without-after-with", none, true},
		{"aware-no-families", gr(), true},
		{"with-both", gr(v4, v6), false},
		{"ipv6-only", gr(v6), true},
	}
	var b grBook
	for _, s := range steps {
		b.established(a, s.caps)
		if got := b.ended(a); got != s.want {
			t.Errorf("%s: ended %v, want %v", s.name, got, s.want)
		}
		if b.ended(a) {
			t.Errorf("%s: reported twice", s.name)
		}
	}
	b.reset(a)
	b.established(a, none)
	if b.ended(a) {
		t.Error("after reset: a session without the capability is marked")
	}
}
