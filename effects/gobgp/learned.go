package gobgp

import (
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
// expects (§9.1 rule 3). Once a server stops or is replaced, none of its
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
	return bgp.WatchEvent(ctx, server.WatchEventMessageCallbacks{
		OnBestPath: func(paths []*apiutil.Path, _ time.Time) {
			sub.mu.Lock()
			defer sub.mu.Unlock()
			first := init
			init = false
			if sub.done || sub.epoch != epoch {
				return
			}
			a := bestPathsAction(paths)
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

// bestPathsAction groups one best-path event by prefix (docs/routes.md
// §9.1 rule 1): each unicast prefix with its paths, withdrawn ones marked,
// prefixes in order. Paths of other families are left out (§11.5).
func bestPathsAction(paths []*apiutil.Path) state.BestPathsChanged {
	var a state.BestPathsChanged
	idx := map[netip.Prefix]int{}
	for _, p := range paths {
		pfx, ok := pathPrefix(p)
		if !ok {
			continue
		}
		i, seen := idx[pfx]
		if !seen {
			i = len(a.Prefixes)
			idx[pfx] = i
			a.Prefixes = append(a.Prefixes, state.BestPaths{Prefix: pfx})
		}
		a.Prefixes[i].Paths = append(a.Prefixes[i].Paths, learnedPath(p))
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
