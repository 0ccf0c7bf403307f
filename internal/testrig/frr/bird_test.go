package frr

import (
	"net/netip"
	"testing"

	"github.com/peeragent/peeragent/internal/testrig/bird"
)

// TestFRRAndBird peers FRR on 127.0.0.1 with BIRD 2 on 127.0.0.2 over
// MD5, both announcing a prefix, then rotates the password on both: each
// side counts exactly one more session.
func TestFRRAndBird(t *testing.T) {
	Require(t)
	bird.Require(t)
	ctx := withDeadline(t)
	portF, portB := FreePort(t, addrA), bird.FreePort(t, addrB)
	cf := Config{Address: addrA, Port: portF, AS: 65001,
		Announce:  []netip.Prefix{netip.MustParsePrefix("10.1.0.0/24")},
		Neighbors: []Neighbor{{Name: "bird", Address: addrB, Port: portB, AS: 65002, Password: "old-key"}}}
	cb := bird.Config{Address: addrB, Port: portB, AS: 65002,
		Announce:  []netip.Prefix{netip.MustParsePrefix("10.2.0.0/24")},
		Neighbors: []bird.Neighbor{{Name: "frr", Address: addrA, Port: portF, AS: 65001, Password: "old-key"}}}
	f, b := Start(t, cf), bird.Start(t, cb)

	before, err := f.WaitNeighbor(ctx, addrB, func(n NeighborState) bool {
		return n.Established() && n.AddressFamilies["ipv4Unicast"].AcceptedPrefixes == 1
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.WaitProtocol(ctx, "frr", func(p bird.ProtocolState) bool {
		return p.Established() && p.Channels["ipv4"].Imported == 1
	}); err != nil {
		t.Fatal(err)
	}
	if before.ConnectionsEstablished != 1 || b.Establishments("frr") != 1 {
		t.Fatalf("FRR %v, BIRD %d establishments; want 1 each", before, b.Establishments("frr"))
	}

	cf.Neighbors[0].Password, cb.Neighbors[0].Password = "new-key", "new-key"
	reconfigure(t, f, cf)
	if err := b.Reconfigure(cb); err != nil {
		t.Fatal(err)
	}
	after, err := f.WaitNeighbor(ctx, addrB, func(n NeighborState) bool {
		return n.Established() && n.ConnectionsEstablished > before.ConnectionsEstablished
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.WaitEstablished(ctx, "frr"); err != nil {
		t.Fatal(err)
	}
	stillSame(t, f, after)
	if after.ConnectionsEstablished != 2 || b.Establishments("frr") != 2 {
		t.Fatalf("after rotation: FRR %v, BIRD %d establishments; want 2 each", after, b.Establishments("frr"))
	}
}
