package e2e

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// wireNextHops reads a TCP stream of BGP messages as a peer sent them and
// returns, for each UPDATE whose MP_REACH_NLRI (IPv6 unicast) announces
// prefix, its next hops as on the wire: the global one, then the
// link-local one when the next hop field is 32 bytes long (RFC 2545). It
// reads the bytes itself, not through a BGP library, so that nothing
// between the wire and the test can drop a next hop. A message cut short
// at the end of the stream is left for a later read.
func wireNextHops(stream []byte, prefix netip.Prefix) ([][]netip.Addr, error) {
	var found [][]netip.Addr
	for len(stream) >= 19 {
		n := int(binary.BigEndian.Uint16(stream[16:]))
		if n < 19 || n > 65535 {
			return found, fmt.Errorf("BGP message length %d", n)
		}
		if len(stream) < n {
			break
		}
		msg := stream[:n]
		stream = stream[n:]
		if msg[18] != 2 { // not an UPDATE
			continue
		}
		body := msg[19:]
		if len(body) < 4 {
			return found, fmt.Errorf("short UPDATE")
		}
		wd := int(binary.BigEndian.Uint16(body))
		if len(body) < 2+wd+2 {
			return found, fmt.Errorf("short UPDATE")
		}
		attrs := body[2+wd:]
		al := int(binary.BigEndian.Uint16(attrs))
		if len(attrs) < 2+al {
			return found, fmt.Errorf("short path attributes")
		}
		for a := attrs[2 : 2+al]; len(a) > 0; {
			if len(a) < 3 {
				return found, fmt.Errorf("short path attribute")
			}
			flags, typ, hdr, l := a[0], a[1], 3, int(a[2])
			if flags&0x10 != 0 { // extended length
				if len(a) < 4 {
					return found, fmt.Errorf("short path attribute")
				}
				hdr, l = 4, int(binary.BigEndian.Uint16(a[2:]))
			}
			if len(a) < hdr+l {
				return found, fmt.Errorf("path attribute %d: length %d beyond the message", typ, l)
			}
			v := a[hdr : hdr+l]
			a = a[hdr+l:]
			if typ != 14 { // MP_REACH_NLRI
				continue
			}
			nh, ok, err := mpReach(v, prefix)
			if err != nil {
				return found, err
			}
			if ok {
				found = append(found, nh)
			}
		}
	}
	return found, nil
}

// mpReach reads one MP_REACH_NLRI value: its next hops, and whether its
// NLRI (IPv6 unicast) holds prefix.
func mpReach(v []byte, prefix netip.Prefix) ([]netip.Addr, bool, error) {
	if len(v) < 5 {
		return nil, false, fmt.Errorf("short MP_REACH_NLRI")
	}
	afi, safi, nl := binary.BigEndian.Uint16(v), v[2], int(v[3])
	if afi != 2 || safi != 1 {
		return nil, false, nil
	}
	if nl != 16 && nl != 32 || len(v) < 4+nl+1 {
		return nil, false, fmt.Errorf("IPv6 next hop field of %d bytes", nl)
	}
	var nhs []netip.Addr
	for i := 0; i < nl; i += 16 {
		a, _ := netip.AddrFromSlice(v[4+i : 4+i+16])
		nhs = append(nhs, a)
	}
	has := false
	for nlri := v[4+nl+1:]; len(nlri) > 0; {
		bits := int(nlri[0])
		size := (bits + 7) / 8
		if bits > 128 || len(nlri) < 1+size {
			return nil, false, fmt.Errorf("bad IPv6 NLRI")
		}
		var b [16]byte
		copy(b[:], nlri[1:1+size])
		has = has || netip.PrefixFrom(netip.AddrFrom16(b), bits) == prefix
		nlri = nlri[1+size:]
	}
	return nhs, has, nil
}

// TestWireNextHops reads UPDATEs that GoBGP's encoder wrote, after an
// OPEN and a KEEPALIVE: one with the global and link-local next hops, one
// with the global one only, one for another prefix, and a message cut
// short at the end.
func TestWireNextHops(t *testing.T) {
	global, ll := netip.MustParseAddr("fd00:37::1"), netip.MustParseAddr("fe80::1")
	prefix := netip.MustParsePrefix("fd00:99::/64")
	update := func(p netip.Prefix, nhs ...netip.Addr) []byte {
		n, err := bgp.NewIPAddrPrefix(p)
		if err != nil {
			t.Fatal(err)
		}
		reach, err := bgp.NewPathAttributeMpReachNLRI(bgp.RF_IPv6_UC, []bgp.PathNLRI{{NLRI: n}}, nhs...)
		if err != nil {
			t.Fatal(err)
		}
		b, err := bgp.NewBGPUpdateMessage(nil, []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), reach}, nil).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	keepalive, err := bgp.NewBGPKeepAliveMessage().Serialize()
	if err != nil {
		t.Fatal(err)
	}
	om, err := bgp.NewBGPOpenMessage(65037, 9, netip.MustParseAddr("10.37.0.1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	open, err := om.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	both := update(prefix, global, ll)
	stream := slices.Concat(open, keepalive, both, update(netip.MustParsePrefix("fd00:98::/64"), global, ll),
		update(prefix, global), both[:len(both)-3])
	got, err := wireNextHops(stream, prefix)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]netip.Addr{{global, ll}, {global}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("wireNextHops = %v, want %v", got, want)
	}
	if _, err := wireNextHops(append(slices.Clone(keepalive[:16]), 0, 5, 4), prefix); err == nil {
		t.Error("a message length of 5 was accepted")
	}
}
