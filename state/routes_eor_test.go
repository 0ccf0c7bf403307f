package state

import (
	"net/netip"
	"testing"
)

// HasEOR finds exactly the End-of-RIBs WithEOR added, without allocating:
// the settle check asks it for every neighbor at every step.
func TestHasEOR(t *testing.T) {
	a, b := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("fd00::2")
	var r Routing
	r.EOR = r.WithEOR(a, "ipv4-unicast")
	r.EOR = r.WithEOR(b, "ipv6-unicast")
	for _, c := range []struct {
		addr netip.Addr
		fam  string
		want bool
	}{
		{a, "ipv4-unicast", true},
		{netip.AddrFrom16(a.As16()), "ipv4-unicast", true}, // mapped: the same neighbor
		{a, "ipv4-unicas", false},
		{a, "ipv4-unicast2", false},
		{a, "ipv6-unicast", false},
		{b, "ipv6-unicast", true},
		{b, "ipv4-unicast", false},
		{netip.MustParseAddr("10.0.0.3"), "ipv4-unicast", false},
	} {
		if got := r.HasEOR(c.addr, c.fam); got != c.want {
			t.Errorf("HasEOR(%s, %s) = %v, want %v", c.addr, c.fam, got, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { r.HasEOR(a, "ipv4-unicast") }); n != 0 {
		t.Errorf("HasEOR allocates %v times", n)
	}
}
