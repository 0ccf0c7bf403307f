package reducer

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// poolOfByScan is poolOf as a scan of every length from p's own down to
// 0, one lookup of the pool index each: the definition poolOf's list of
// winners must agree with.
func (t *tx) poolOfByScan(p netip.Prefix) (pool *state.IPPool, noBGP bool) {
	for bits := p.Bits(); bits >= 0; bits-- {
		prefix := state.PrefixKey(netip.PrefixFrom(p.Addr(), bits).Masked()) + "/"
		t.s.Index.PoolsByCIDR.RangeFrom(prefix, func(key, name string) bool {
			if strings.HasPrefix(key, prefix) {
				e, _ := t.s.Inputs.Pools.Get(name)
				if pool == nil {
					pool = e.Spec
				}
				noBGP = noBGP || noExport(e)
			}
			return false
		})
	}
	return pool, noBGP
}

// TestPoolOfAgreesWithScan: nested, shared and export-disabled pools of
// both families, random prefixes in and around them, and the answer
// followed through pool changes within one step.
func TestPoolOfAgreesWithScan(t *testing.T) {
	s := FromScratch(localNode, state.Options{}, Objects{
		Nodes:   []state.Node{{Name: "node-a", IPv4Address: "10.0.0.1/24", IPv6Address: "fd00::1/64"}},
		Configs: []state.BGPConfiguration{{Name: "default", ASNumber: 64512}},
		Pools: []state.IPPool{
			{Name: "wide", CIDR: "10.0.0.0/8"},
			{Name: "b-pods", CIDR: "10.244.0.0/16", DisableBGPExport: true},
			{Name: "a-pods", CIDR: "10.244.0.0/16"},
			{Name: "narrow", CIDR: "10.244.7.0/24", IPIPMode: "Always"},
			{Name: "hosts", CIDR: "10.244.7.9/32"},
			{Name: "bad", CIDR: "not-a-cidr"},
			{Name: "v6", CIDR: "fd00:10::/48"},
			{Name: "v6-inner", CIDR: "fd00:10:0:1::/64", DisableBGPExport: true},
		},
	})
	r := rand.New(rand.NewPCG(3, 4))
	prefix := func() netip.Prefix {
		if r.IntN(3) == 0 {
			a := [16]byte{0xfd, 0, 0, 0x10, 0, 0, 0, byte(r.IntN(3))}
			a[15] = byte(r.IntN(256))
			return netip.PrefixFrom(netip.AddrFrom16(a), 40+r.IntN(89)).Masked()
		}
		a := [4]byte{10, []byte{244, 244, 1, 99}[r.IntN(4)], byte(5 + r.IntN(4)), byte(r.IntN(16))}
		if r.IntN(5) == 0 {
			a[0] = 11
		}
		return netip.PrefixFrom(netip.AddrFrom4(a), 4+r.IntN(29)).Masked()
	}
	tx := &tx{s: s, dirty: map[string]struct{}{}}
	check := func(when string) {
		t.Helper()
		for range 2000 {
			p := prefix()
			gotPool, gotNo := tx.poolOf(p)
			wantPool, wantNo := tx.poolOfByScan(p)
			if gotPool != wantPool || gotNo != wantNo {
				t.Fatalf("%s: poolOf(%s) = %v, %v; the scan says %v, %v", when, p, gotPool, gotNo, wantPool, wantNo)
			}
		}
	}
	check("initial pools")
	tx.upsertPool(&state.IPPool{Name: "a-pods", CIDR: "10.244.0.0/17"})
	tx.deletePool("wide")
	tx.upsertPool(&state.IPPool{Name: "v6-inner", CIDR: "fd00:10:0:1::/64"})
	check("after pool changes in the same step")
}

// TestCompareKeysIsKeyOrder: routesDone sorts prefixes with compareKeys
// instead of making their keys; the order must be the keys' order.
func TestCompareKeysIsKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	var ps []netip.Prefix
	for range 3000 {
		var a netip.Addr
		switch r.IntN(3) {
		case 0:
			a = netip.AddrFrom4([4]byte{10, byte(r.IntN(3)), byte(r.IntN(3)), byte(r.IntN(256))})
		case 1:
			a = netip.AddrFrom16([16]byte{0xfd, 0, 15: byte(r.IntN(256))})
		default:
			a = netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: 10, 15: byte(r.IntN(256))}) // IPv4-mapped
		}
		p := netip.PrefixFrom(a, r.IntN(a.BitLen()+1))
		if r.IntN(2) == 0 {
			p = p.Masked()
		}
		ps = append(ps, p)
	}
	ps = append(ps, netip.Prefix{})
	for i := 1; i < len(ps); i++ {
		a, b := ps[i-1], ps[i]
		want := strings.Compare(state.PrefixKey(a), state.PrefixKey(b))
		if got := compareKeys(a, b); (got < 0) != (want < 0) || (got == 0) != (want == 0) {
			t.Fatalf("compareKeys(%s, %s) = %d, the keys compare %d", a, b, got, want)
		}
	}
}
