package frr

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/peeragent/peeragent/internal/testrig/netns"
)

// TestZebraSharedLink: two FRRs, each with zebra in a namespace of its
// own, peer eBGP (single hop) over a veth pair. Each sees the other on a
// shared network and sends its prefix with two next hops, the global
// address then its own link-local one, which the other receives as such.
func TestZebraSharedLink(t *testing.T) {
	requireZebra(t)
	a, b := netns.Pair(t, netip.MustParsePrefix("fd00:37::1/64"), netip.MustParsePrefix("fd00:37::2/64"))
	ctx := withDeadline(t)
	prefixA, prefixB := netip.MustParsePrefix("fd00:98::/64"), netip.MustParsePrefix("fd00:97::/64")
	fa := Start(t, Config{RouterID: netip.MustParseAddr("10.37.0.1"), Address: a.Addr.Addr(), Port: 179, AS: 65001,
		Namespace: a.NS, Zebra: true, Announce: []netip.Prefix{prefixA},
		Neighbors: []Neighbor{{Name: "b", Address: b.Addr.Addr(), Port: 179, AS: 65002}}})
	fb := Start(t, Config{RouterID: netip.MustParseAddr("10.37.0.2"), Address: b.Addr.Addr(), Port: 179, AS: 65002,
		Namespace: b.NS, Zebra: true, Announce: []netip.Prefix{prefixB},
		Neighbors: []Neighbor{{Name: "a", Address: a.Addr.Addr(), Port: 179, AS: 65001}}})
	if out, err := fa.ExecZebra("show interface brief"); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("zebra in %s:\n%s", a.NS, out)
	}

	for _, s := range []struct {
		f           *FRR
		me, peer    netns.End
		sent, recvd netip.Prefix
		via         *FRR
	}{{fa, a, b, prefixA, prefixB, fb}, {fb, b, a, prefixB, prefixA, fa}} {
		n, err := s.f.WaitNeighbor(ctx, s.peer.Addr.Addr(), func(n NeighborState) bool {
			return n.Established() && n.AddressFamilies["ipv6Unicast"].AcceptedPrefixes == 1
		})
		if err != nil {
			t.Fatal(err)
		}
		if n.Connection != "sharedNetwork" || n.NexthopGlobal != s.me.Addr.Addr().String() || n.NexthopLocal != s.me.LinkLocal.String() {
			t.Errorf("%s: neighbor %s: %s, next hops %s and %s; want sharedNetwork, %s and %s", s.f, n.Address,
				n.Connection, n.NexthopGlobal, n.NexthopLocal, s.me.Addr.Addr(), s.me.LinkLocal)
		}
		got := nexthops(t, s.via, s.sent)
		want := []Nexthop{{IP: s.me.Addr.Addr().String(), Scope: "global"}, {IP: s.me.LinkLocal.String(), Scope: "link-local"}}
		if !slices.Equal(got, want) {
			t.Errorf("%s received %s with next hops %v, want %v", s.via, s.sent, got, want)
		}
		t.Logf("%s sent %s: %s; %s received next hops %v", s.f, s.sent, n.Connection, s.via, got)
	}
}

// nexthops are the next hops of f's one path of p.
func nexthops(t *testing.T, f *FRR, p netip.Prefix) []Nexthop {
	t.Helper()
	r, out, err := f.Route(p)
	if err != nil || len(r.Paths) != 1 {
		t.Fatalf("%s: route %s: %v, %d paths: %s", f, p, err, len(r.Paths), out)
	}
	return r.Paths[0].Nexthops
}
