package gobgp

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/peeragent/peeragent/state"
)

// pathKey is a path's identity in an equal-best set, as GoBGP matches
// paths across a change (EqualBySourceAndPathID): its source and its path
// ID.
type pathKey struct {
	addr, id netip.Addr
	asn      uint32
	remoteID uint32
}

func keyOf(p *apiutil.Path) pathKey {
	return pathKey{addr: p.PeerAddress, id: p.PeerID, asn: p.PeerASN, remoteID: p.RemoteID}
}

func compareKeys(x, y pathKey) int {
	if c := x.addr.Compare(y.addr); c != 0 {
		return c
	}
	if c := x.id.Compare(y.id); c != 0 {
		return c
	}
	if x.asn != y.asn {
		return cmp.Compare(x.asn, y.asn)
	}
	return cmp.Compare(x.remoteID, y.remoteID)
}

// bestSets is one watch's copy of its server's equal-best sets, per
// unicast prefix (docs/routes.md §9.1 rule 1, §9.4). With multipath on,
// GoBGP v4.8.0 sends whole sets only in the initial snapshot
// (MultiPathList); later best-path events carry just the paths added to,
// changed in or removed from a prefix's set (UpdatePathList and
// WithdrawPathList, from GetMultiBestPathDiff, which locRIBPathsForBMP
// prefers). The reducer replaces each listed prefix's set, so the watch
// applies each event to its copy and reports the whole resulting sets.
//
// A set is a slice sorted by key, not a map: a set holds one path, or a
// few (at most the ECMP paths), and a Go map of one entry cost about
// 950 bytes per learned prefix (BenchmarkLearnedHeap, docs/routes.md §9.9).
type bestSets map[netip.Prefix][]keyedPath

// keyedPath is one path of a set under its key.
type keyedPath struct {
	k pathKey
	p state.LearnedPath
}

// put sets the path of key k in the set of pfx.
func (s bestSets) put(pfx netip.Prefix, k pathKey, lp state.LearnedPath) {
	set := s[pfx]
	i, found := slices.BinarySearchFunc(set, k, func(e keyedPath, k pathKey) int { return compareKeys(e.k, k) })
	if found {
		set[i].p = lp
		return
	}
	s[pfx] = slices.Insert(set, i, keyedPath{k: k, p: lp})
}

// drop removes the path of key k from the set of pfx, and the set once empty.
func (s bestSets) drop(pfx netip.Prefix, k pathKey) {
	set := s[pfx]
	i, found := slices.BinarySearchFunc(set, k, func(e keyedPath, k pathKey) int { return compareKeys(e.k, k) })
	if !found {
		return
	}
	if set = slices.Delete(set, i, i+1); len(set) == 0 {
		delete(s, pfx)
	} else {
		s[pfx] = set
	}
}

// apply takes one best-path event into the sets and returns each prefix
// it touched with that prefix's whole set, prefixes in order. A prefix
// left with no path is listed with the withdrawals that emptied it, so
// that the reducer empties it too. Paths of other families are left out
// (§11.5).
func (s bestSets) apply(paths []*apiutil.Path) state.BestPathsChanged {
	withdrawn := map[netip.Prefix][]state.LearnedPath{}
	var touched []netip.Prefix
	for _, p := range paths {
		pfx, ok := pathPrefix(p)
		if !ok {
			continue
		}
		if _, seen := withdrawn[pfx]; !seen {
			withdrawn[pfx] = nil
			touched = append(touched, pfx)
		}
		lp, k := learnedPath(p), keyOf(p)
		if lp.Withdrawn {
			withdrawn[pfx] = append(withdrawn[pfx], lp)
			s.drop(pfx, k)
			continue
		}
		s.put(pfx, k, lp)
	}
	var a state.BestPathsChanged
	for _, pfx := range touched {
		bp := state.BestPaths{Prefix: pfx, Paths: s.paths(pfx)}
		if bp.Paths == nil {
			bp.Paths = withdrawn[pfx]
		}
		a.Prefixes = append(a.Prefixes, bp)
	}
	slices.SortFunc(a.Prefixes, func(x, y state.BestPaths) int { return comparePrefix(x.Prefix, y.Prefix) })
	return a
}

// paths is the set of pfx as the reducer takes it (nil: none).
func (s bestSets) paths(pfx netip.Prefix) []state.LearnedPath {
	set := s[pfx]
	if len(set) == 0 {
		return nil
	}
	out := make([]state.LearnedPath, len(set))
	for i, e := range set {
		out[i] = e.p
	}
	return out
}

// all is every prefix with its whole set, prefixes in order: the
// snapshot of a new generation of the same server (watchHub.regen).
func (s bestSets) all() []state.BestPaths {
	out := make([]state.BestPaths, 0, len(s))
	for pfx := range s {
		out = append(out, state.BestPaths{Prefix: pfx, Paths: s.paths(pfx)})
	}
	slices.SortFunc(out, func(x, y state.BestPaths) int { return comparePrefix(x.Prefix, y.Prefix) })
	return out
}

func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// pathPrefix is the unicast prefix of a path, if it is one.
func pathPrefix(p *apiutil.Path) (netip.Prefix, bool) {
	if p == nil || (p.Family != bgp.RF_IPv4_UC && p.Family != bgp.RF_IPv6_UC) {
		return netip.Prefix{}, false
	}
	n, ok := p.Nlri.(*bgp.IPAddrPrefix)
	if !ok || !n.Prefix.IsValid() {
		return netip.Prefix{}, false
	}
	return n.Prefix.Masked(), true
}

// learnedPath is one path as the reducer takes it: the next hops (the
// NEXT_HOP, else the MP_REACH global then link-local one), the neighbor it
// came from, and whether it is N's own or a withdrawal.
func learnedPath(p *apiutil.Path) state.LearnedPath {
	lp := state.LearnedPath{Withdrawn: p.Withdrawal}
	if a := p.PeerAddress; a.IsValid() && !a.IsUnspecified() {
		lp.Neighbor = a.Unmap()
	} else {
		lp.Local = true
	}
	add := func(a netip.Addr) {
		if a.IsValid() && !a.IsUnspecified() && !slices.Contains(lp.NextHops, a.Unmap()) {
			lp.NextHops = append(lp.NextHops, a.Unmap())
		}
	}
	for _, attr := range p.Attrs {
		switch x := attr.(type) {
		case *bgp.PathAttributeNextHop:
			add(x.Value)
		case *bgp.PathAttributeMpReachNLRI:
			add(x.Nexthop)
			add(x.LinkLocalNexthop)
		}
	}
	return lp
}
