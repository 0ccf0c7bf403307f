package reducer

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// markPath: the path of prefix p must be derived again before the step ends.
func (t *tx) markPath(p netip.Prefix) {
	if t.paths == nil {
		t.paths = map[string]netip.Prefix{}
	}
	t.paths[state.PrefixKey(p)] = p
}

// markInside marks every prefix with origins inside c (c itself included):
// one contiguous range of the origins index.
func (t *tx) markInside(c netip.Prefix) {
	if t.allPaths {
		return
	}
	t.s.Index.Origins.RangeFrom(state.PrefixKey(c.Masked()), func(_ string, o *state.Origins) bool {
		if o.Prefix.Addr().Is4() != c.Addr().Is4() || !c.Contains(o.Prefix.Addr()) {
			return false
		}
		if o.Prefix.Bits() >= c.Bits() {
			t.markPath(o.Prefix)
		}
		return true
	})
}

// derivePaths re-derives the marked paths, in prefix order.
func (t *tx) derivePaths() {
	if t.allPaths {
		t.allPaths = false
		t.s.Index.Origins.Range(func(_ string, o *state.Origins) bool { t.markPath(o.Prefix); return true })
		t.s.Out.Advertised.Range(func(_ string, p *state.Path) bool { t.markPath(p.Prefix); return true })
	}
	keys := make([]string, 0, len(t.paths))
	for k := range t.paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.derivePath(k, t.paths[k])
	}
	t.paths = nil
}

// derivePath decides the own path of one prefix (docs/routes.md §8.1,
// §8.2), the prefix's membership of the own-blocks set (§8.3 rule 12) and
// the problems of its affinities (§11.1).
func (t *tx) derivePath(k string, p netip.Prefix) {
	t.markRoute(p) // an own block's drop route, a learned route of an own path (docs/routes.md §9.2, §9.3)
	o, _ := t.s.Index.Origins.Get(k)
	var own, pods []string
	var svc *state.Origins
	if o != nil {
		own, pods, svc = t.ownAffinities(o), o.Pods, o
	}
	l := t.local()
	var nh netip.Addr
	if l != nil {
		nh = l.Addr(p.Addr().Is6())
	}
	pool, noBGP := t.poolOf(p)
	full := uint8(p.Addr().BitLen())
	t.setMember(state.SetMember{Set: state.SetName(state.SetOwn, p), Prefix: p, Min: uint8(p.Bits()), Max: full}, len(own) > 0)
	origins, probs := t.blockOrigins(p, own, pool != nil, noBGP, nh)
	if len(pods) > 0 && nh.IsValid() && pool != nil && !noBGP && !t.insideOwnBlock(p) {
		for _, pk := range pods {
			origins = append(origins, podObject(pk))
		}
	}
	// docs/routes.md §8.4: outside pools, never problems; inside a
	// disableBGPExport pool none (§8.1 rule 6)
	if svc != nil && nh.IsValid() && !noBGP {
		if len(svc.Ranges) > 0 {
			origins = append(origins, configObject("default"))
		}
		for _, sk := range svc.Services {
			origins = append(origins, serviceObject(sk))
		}
	}
	t.setProblems(pathBucket(k), probs)
	old, _ := t.s.Out.Advertised.Get(k)
	if len(origins) == 0 {
		if old != nil {
			t.s.Out.Advertised = t.s.Out.Advertised.Delete(k)
			t.pathCall(k, p, old, nil)
		}
		return
	}
	n := &state.Path{Prefix: p, NextHop: nh, Communities: t.communitiesOf(p), Origins: origins}
	t.pathCall(k, p, old, n)
	if !n.Equal(old) {
		t.s.Out.Advertised = t.s.Out.Advertised.Set(k, n)
	}
}

// blockOrigins are the origins a block of this node's affinities own gives
// its path, and the affinities' problems (docs/routes.md §8.1 rules 2 and
// 6, §11.1): inPool, whether some IPPool holds the block; noBGP, whether
// that pool disables BGP export; nh, this node's address of its family.
func (t *tx) blockOrigins(p netip.Prefix, own []string, inPool, noBGP bool, nh netip.Addr) (origins []string, probs []state.Problem) {
	for _, name := range own {
		obj := affinityObject(name)
		switch {
		case !inPool && t.pendingDeletion(name):
			// docs/routes.md §8.1 rule 2: BIRD's calico_aggr accepts no
			// pendingDeletion block, and outside every pool nothing else does.
			probs = append(probs, state.Problem{Object: obj, Reason: fmt.Sprintf("block %s is outside every IPPool and pendingDeletion; not advertised (its drop route stays)", p)})
			continue
		case !inPool:
			probs = append(probs, state.Problem{Object: obj, Reason: fmt.Sprintf("block %s is outside every IPPool; advertised", p)})
		}
		switch {
		case !nh.IsValid():
			probs = append(probs, state.Problem{Object: obj, Reason: fmt.Sprintf("node has no %s address; block %s is not advertised", family(p), p)})
		case !noBGP:
			origins = append(origins, obj)
		}
	}
	return origins, probs
}

func family(p netip.Prefix) string {
	if p.Addr().Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// ownAffinities are the affinities that make o's prefix one of N's blocks.
func (t *tx) ownAffinities(o *state.Origins) []string {
	var out []string
	for _, name := range o.Blocks {
		if e, ok := t.s.Inputs.Affinities.Get(name); ok && e.Own {
			out = append(out, name)
		}
	}
	return out
}

// pendingDeletion reports whether affinity name is in state pendingDeletion.
func (t *tx) pendingDeletion(name string) bool {
	e, ok := t.s.Inputs.Affinities.Get(name)
	return ok && e.Spec.State == "pendingDeletion"
}

// insideOwnBlock reports whether p is inside (or is) one of N's blocks.
func (t *tx) insideOwnBlock(p netip.Prefix) bool {
	for bits := p.Bits(); bits >= 0; bits-- {
		q := netip.PrefixFrom(p.Addr(), bits).Masked()
		if o, ok := t.s.Index.Origins.Get(state.PrefixKey(q)); ok && len(t.ownAffinities(o)) > 0 {
			return true
		}
	}
	return false
}

// poolOf is the pool of p (the most specific pool containing it; at one
// CIDR the smallest name), and whether any pool containing p disables BGP
// export (docs/routes.md §8.1 rule 6): nil, false outside every pool.
func (t *tx) poolOf(p netip.Prefix) (pool *state.IPPool, noBGP bool) {
	bits := -1
	for _, w := range t.poolWinners() {
		c := w.cidr
		if c.Bits() > p.Bits() || c.Addr().Is4() != p.Addr().Is4() || netip.PrefixFrom(p.Addr(), c.Bits()).Masked() != c {
			continue
		}
		if c.Bits() > bits {
			pool, bits = w.e.Spec, c.Bits()
		}
		noBGP = noBGP || noExport(w.e)
	}
	return pool, noBGP
}

// poolCache holds poolWinners for the pool maps it was built from.
type poolCache struct {
	valid   bool
	byCIDR  *pmap.Map[string]
	inputs  *pmap.Map[*state.PoolEntry]
	winners []poolWinner
}

// poolWinner is the pool that wins at one CIDR of Index.PoolsByCIDR.
type poolWinner struct {
	cidr netip.Prefix
	e    *state.PoolEntry
}

// poolWinners lists the winner at each CIDR of Index.PoolsByCIDR (the
// first key of the CIDR: the smallest name), kept in the step for as long
// as the pools do not change: a learned event of n prefixes asks for the
// pool of each, and there are few pools.
func (t *tx) poolWinners() []poolWinner {
	c := &t.pools
	if c.valid && c.byCIDR == t.s.Index.PoolsByCIDR && c.inputs == t.s.Inputs.Pools {
		return c.winners
	}
	*c = poolCache{valid: true, byCIDR: t.s.Index.PoolsByCIDR, inputs: t.s.Inputs.Pools}
	last := ""
	t.s.Index.PoolsByCIDR.Range(func(k, name string) bool {
		at := k[:len(k)-len(name)-1] // poolCIDRKey: PrefixKey/NAME
		if at == last {
			return true // a larger name at the same CIDR
		}
		last = at
		cidr, ok := prefixOfKey(at)
		if e, has := t.s.Inputs.Pools.Get(name); ok && has {
			c.winners = append(c.winners, poolWinner{cidr, e})
		}
		return true
	})
	return c.winners
}

// prefixOfKey reads a state.PrefixKey back.
func prefixOfKey(k string) (netip.Prefix, bool) {
	addr, bits, ok := strings.Cut(k, "/")
	if !ok || len(bits) != 3 || len(addr) < 1 {
		return netip.Prefix{}, false
	}
	n, err := strconv.Atoi(bits)
	if err != nil {
		return netip.Prefix{}, false
	}
	raw, err := hex.DecodeString(addr[1:])
	if err != nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(raw)
	if !ok || (addr[0] == '4') != a.Is4() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, n), true
}

// communitiesOf: the union of the communities of every prefixAdvertisement
// whose CIDR contains p, sorted numerically (docs/routes.md §8.5 rule 3).
func (t *tx) communitiesOf(p netip.Prefix) []string {
	out := []string{}
	for _, r := range t.s.Index.Communities {
		if r.Prefix.Addr().Is4() == p.Addr().Is4() && r.Prefix.Bits() <= p.Bits() && r.Prefix.Contains(p.Addr()) {
			out = append(out, r.Values...)
		}
	}
	slices.SortFunc(out, compareCommunities)
	return slices.Compact(out)
}

// compareCommunities orders standard communities before large ones, each
// numerically part by part.
func compareCommunities(a, b string) int {
	pa, pb := communityParts(a), communityParts(b)
	if len(pa) != len(pb) {
		return len(pa) - len(pb)
	}
	for i := range pa {
		switch {
		case pa[i] < pb[i]:
			return -1
		case pa[i] > pb[i]:
			return 1
		}
	}
	return 0
}
