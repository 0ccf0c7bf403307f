package gobgp

import (
	"net/netip"
	"slices"
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
		if got, _ := b.ended(a); got != s.want {
			t.Errorf("%s: ended %v, want %v", s.name, got, s.want)
		}
		if again, _ := b.ended(a); again {
			t.Errorf("%s: reported twice", s.name)
		}
	}
	b.reset(a)
	b.established(a, none)
	if stale, _ := b.ended(a); stale {
		t.Error("after reset: a session without the capability is marked")
	}
}

// TestGRBookReadsTheSession: what a session's OPEN offered for graceful
// restart (docs/routes.md §9.5 rule 2) is reported once when it ends.
func TestGRBookReadsTheSession(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.1")
	v4 := bgp.NewCapGracefulRestartTuple(bgp.RF_IPv4_UC, false)
	v6 := bgp.NewCapGracefulRestartTuple(bgp.RF_IPv6_UC, true)
	llgr := bgp.NewCapLongLivedGracefulRestart([]*bgp.CapLongLivedGracefulRestartTuple{
		bgp.NewCapLongLivedGracefulRestartTuple(bgp.RF_IPv4_UC, true, 3600)})
	cases := []struct {
		name string
		caps []bgp.ParameterCapabilityInterface
		want grSession
	}{
		{"none", nil, grSession{}},
		{"both", []bgp.ParameterCapabilityInterface{bgp.NewCapGracefulRestart(false, true, 120, []*bgp.CapGracefulRestartTuple{v4, v6})},
			grSession{restart: 120, families: []string{"ipv4-unicast", "ipv6-unicast"}}},
		{"long-lived", []bgp.ParameterCapabilityInterface{bgp.NewCapGracefulRestart(false, true, 30, []*bgp.CapGracefulRestartTuple{v4}), llgr},
			grSession{restart: 30, families: []string{"ipv4-unicast"}, longLived: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b grBook
			b.established(a, c.caps)
			_, got := b.ended(a)
			if got.restart != c.want.restart || !slices.Equal(got.families, c.want.families) || got.longLived != c.want.longLived {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
			if _, again := b.ended(a); again.restart != 0 || again.families != nil {
				t.Errorf("reported twice: %+v", again)
			}
		})
	}
}
