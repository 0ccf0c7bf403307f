package gobgp

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/peeragent/peeragent/state"
)

// WatchLearned reports the speaker's best paths as state.BestPathsChanged
// and the End-of-RIBs it receives as state.EndOfRIBReceived until ctx
// ends, then returns nil (docs/routes.md §9.1). It follows the speaker
// across restarts as WatchSessions does: each server started by a
// StartServer or RestartServer with a non-zero Gen is watched from its
// start, its first report being the initial snapshot (Init) of its global
// RIB, and every fact carries that Gen, the generation the reducer
// expects (§9.1 rule 3). Every prefix a fact lists comes with its whole
// equal-best set, which the watch assembles from GoBGP's multipath deltas
// (bestSets; §9.1 rule 1). Once a server stops or is replaced, none of its
// events is dispatched any more. dispatch is called from one goroutine at
// a time and never after WatchLearned has returned.
func (e *Executor) WatchLearned(ctx context.Context, dispatch func(state.Action)) error {
	sub := &learnedSub{dispatch: dispatch}
	if err := e.learned.add(sub); err != nil {
		return fmt.Errorf("watch best paths: %w", err)
	}
	<-ctx.Done()
	e.learned.remove(sub)
	return nil
}

// learnedHub keeps the best-path watchers on the current server.
type learnedHub struct {
	e      *Executor
	mu     sync.Mutex
	subs   map[*learnedSub]bool
	cur    *server.BgpServer // nil while stopped or without a generation
	gen    uint64            // the speaker generation of cur
	cancel context.CancelFunc
	epoch  uint64 // bumped at each attach and detach
}

// learnedSub is one WatchLearned call.
type learnedSub struct {
	dispatch func(state.Action)
	mu       sync.Mutex // held while dispatching
	epoch    uint64     // events of other epochs are stale
	done     bool
}

func (h *learnedHub) add(sub *learnedSub) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[*learnedSub]bool{}
	}
	h.subs[sub] = true
	sub.epoch = h.epoch
	if h.cur == nil {
		return nil
	}
	return h.watch(h.context(), h.cur, h.gen, sub)
}

func (h *learnedHub) remove(sub *learnedSub) {
	h.mu.Lock()
	delete(h.subs, sub)
	h.mu.Unlock()
	sub.mu.Lock()
	sub.done = true
	sub.mu.Unlock()
}

// context is the one the current server's watches run under; cancel (in
// detach) ends them all.
func (h *learnedHub) context() context.Context {
	if h.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		h.cancel = cancel
		return ctx
	}
	ctx, cancel := context.WithCancel(context.Background())
	prev := h.cancel
	h.cancel = func() { prev(); cancel() }
	return ctx
}

// attach starts watching bgp as the speaker of generation gen, ending the
// watches of any server before it. Generation 0 is not watched: no fact
// of it would be taken.
func (h *learnedHub) attach(bgp *server.BgpServer, gen uint64) {
	h.detach()
	if gen == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur, h.gen = bgp, gen
	ctx := h.context()
	for sub := range h.subs {
		if err := h.watch(ctx, bgp, gen, sub); err != nil {
			h.e.log.Error("watch best paths on the new speaker", "error", err)
		}
	}
}

// detach ends the watches on the current server: from now on none of its
// events is dispatched.
func (h *learnedHub) detach() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cancel != nil {
		h.cancel()
		h.cancel = nil
	}
	h.cur, h.gen = nil, 0
	h.epoch++
	for sub := range h.subs {
		sub.mu.Lock()
		sub.epoch = h.epoch
		sub.mu.Unlock()
	}
}

// current is the generation being watched (0: none).
func (h *learnedHub) current() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gen
}

func (h *learnedHub) watch(ctx context.Context, bgp *server.BgpServer, gen uint64, sub *learnedSub) error {
	epoch := sub.epoch
	init := true // GoBGP sends the snapshot first, from the watch's registration
	var sets bestSets
	return bgp.WatchEvent(ctx, server.WatchEventMessageCallbacks{
		OnBestPath: func(paths []*apiutil.Path, _ time.Time) {
			sub.mu.Lock()
			defer sub.mu.Unlock()
			first := init
			init = false
			if first {
				sets = bestSets{} // this server's sets start from its snapshot
			}
			if sub.done || sub.epoch != epoch {
				return
			}
			a := sets.apply(paths)
			if len(a.Prefixes) == 0 && !first {
				return
			}
			a.Gen, a.Init = gen, first
			sub.dispatch(a)
		},
		OnPathEor: func(p *apiutil.Path, _ time.Time) {
			sub.mu.Lock()
			defer sub.mu.Unlock()
			if sub.done || sub.epoch != epoch || p == nil || !p.PeerAddress.IsValid() {
				return
			}
			sub.dispatch(state.EndOfRIBReceived{Gen: gen, Neighbor: p.PeerAddress.Unmap(), Family: p.Family.String()})
		},
	}, server.WatchBestPath(true), server.WatchEor(true))
}

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
		bp := state.BestPaths{Prefix: pfx}
		if set := s[pfx]; len(set) > 0 {
			bp.Paths = make([]state.LearnedPath, len(set))
			for i, e := range set {
				bp.Paths[i] = e.p
			}
		} else {
			bp.Paths = withdrawn[pfx]
		}
		a.Prefixes = append(a.Prefixes, bp)
	}
	slices.SortFunc(a.Prefixes, func(x, y state.BestPaths) int { return comparePrefix(x.Prefix, y.Prefix) })
	return a
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
