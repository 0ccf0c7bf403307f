package reducer

import (
	"net/netip"
	"testing"
)

// TestBadNextHop: special-purpose and multicast next hops and the
// subnet's network and broadcast addresses are refused; the node's own
// subnet is exempt from the ranges (a lab on 127.0.0.0/8), not from its
// network and broadcast addresses (docs/routes.md §9.2 rule 8).
func TestBadNextHop(t *testing.T) {
	sub := netip.MustParsePrefix("10.0.0.0/24")
	lab := netip.MustParsePrefix("127.0.0.0/8")
	sub6 := netip.MustParsePrefix("fd00::/64")
	for _, tc := range []struct {
		nh   string
		sub  netip.Prefix
		want bool
	}{
		{"10.0.0.2", sub, false},
		{"10.0.0.0", sub, true},
		{"10.0.0.255", sub, true},
		{"192.0.2.1", sub, false},
		{"127.0.0.1", sub, true},
		{"224.0.0.5", sub, true},
		{"255.255.255.255", sub, true},
		{"127.0.0.2", lab, false},
		{"127.0.0.0", lab, true},
		{"169.254.1.1", lab, true},
		{"fd00::2", sub6, false},
		{"fd00::", sub6, true},
		{"ff02::1", sub6, true},
		{"::1", sub6, true},
		{"10.0.0.1", netip.MustParsePrefix("10.0.0.0/31"), false},
	} {
		if got := badNextHop(netip.MustParseAddr(tc.nh), tc.sub) != ""; got != tc.want {
			t.Errorf("badNextHop(%s, %s) refused %v, want %v", tc.nh, tc.sub, got, tc.want)
		}
	}
}

// TestSpecialRanges: a prefix inside a range is martian, a default route
// or a prefix that only covers one is not; any overlap refuses a claim.
func TestSpecialRanges(t *testing.T) {
	for _, tc := range []struct {
		p               string
		inside, overlap bool
	}{
		{"0.0.0.0/0", false, true},
		{"::/0", false, true},
		{"0.0.0.0/8", true, true},
		{"127.0.0.1/32", true, true},
		{"10.0.0.0/8", false, false},
		{"192.0.2.0/24", false, false},
		{"224.0.0.0/3", false, true},
		{"fe80::1/128", true, true},
		{"2001:db8::/32", false, false},
		{"::ffff:10.0.0.1/128", true, true},
	} {
		p := netip.MustParsePrefix(tc.p)
		if got := specialInside(p) != ""; got != tc.inside {
			t.Errorf("specialInside(%s) %v, want %v", p, got, tc.inside)
		}
		if got := specialOverlap(p) != ""; got != tc.overlap {
			t.Errorf("specialOverlap(%s) %v, want %v", p, got, tc.overlap)
		}
	}
}
