package gobgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/peeragent/peeragent/state"
)

// Watch reports what the speaker learns, as one stream in GoBGP's order,
// until ctx ends, then returns nil: every session state change of every
// neighbor as a state.SessionStateChanged (WatchSessions), and the best
// paths and End-of-RIBs as state.BestPathsChanged and
// state.EndOfRIBReceived (WatchLearned, docs/routes.md §9.1). It is one
// GoBGP WatchEvent per server, with the peer, best-path and End-of-RIB
// callbacks, and it follows the speaker across generations:
//   - each server started by a StartServer or RestartServer is watched
//     from its start (before its first neighbor), its first reports being
//     the state of each configured neighbor and the initial snapshot
//     (Init) of its global RIB; every fact carries the generation the
//     start carried (§9.1 rule 3; generation 0 is watched but its facts
//     are not dispatched, as none would be taken);
//   - a StartServer with a new generation for the server already running
//     re-bases the same watch at one point of its stream: a new snapshot
//     of the paths it holds, and the End-of-RIBs received since each
//     neighbor's session came up, under the new generation; no session
//     report repeats, none is lost (a second WatchEvent could not take
//     over the session stream at one point);
//   - when a server stops, every session it had that was not idle is
//     reported idle with the reason "speaker stopped", and none of that
//     server's events is dispatched any more, so none arrives after its
//     successor's.
//
// Every prefix a fact lists comes with its whole equal-best set, which
// the watch assembles from GoBGP's multipath deltas (bestSets; §9.1 rule
// 1). dispatch is called from one goroutine at a time and never after
// Watch has returned.
func (e *Executor) Watch(ctx context.Context, dispatch func(state.Action)) error {
	return e.watch(ctx, dispatch, wantSessions|wantLearned)
}

// WatchSessions is Watch's session reports alone.
func (e *Executor) WatchSessions(ctx context.Context, dispatch func(state.Action)) error {
	return e.watch(ctx, dispatch, wantSessions)
}

// WatchLearned is Watch's best paths and End-of-RIBs alone.
func (e *Executor) WatchLearned(ctx context.Context, dispatch func(state.Action)) error {
	return e.watch(ctx, dispatch, wantLearned)
}

// wants is what a watcher dispatches.
type wants uint8

const (
	wantSessions wants = 1 << iota
	wantLearned
)

func (e *Executor) watch(ctx context.Context, dispatch func(state.Action), w wants) error {
	sub := &watcher{dispatch: dispatch, wants: w, last: map[netip.Addr]string{}}
	if err := e.watches.add(sub); err != nil {
		e.watches.remove(sub)
		return fmt.Errorf("watch the speaker: %w", err)
	}
	<-ctx.Done()
	e.watches.remove(sub)
	return nil
}

// watchHub keeps the watchers on the current server.
type watchHub struct {
	e      *Executor
	mu     sync.Mutex
	subs   map[*watcher]bool
	cur    *server.BgpServer // nil while stopped
	gen    uint64            // the speaker generation of cur
	ctx    context.Context   // the watches on cur run under it
	cancel context.CancelFunc
}

// watcher is one Watch call.
type watcher struct {
	dispatch func(state.Action)
	wants    wants
	mu       sync.Mutex // held while dispatching
	done     bool
	last     map[netip.Addr]string // session states reported, of the current server
	st       *stream               // the watch on the current server; nil while stopped
}

// stream is one watcher's WatchEvent on one server. Its events are taken
// only while it is its watcher's current stream.
type stream struct {
	gen    uint64 // the generation its facts carry
	init   bool   // the snapshot GoBGP sends first has not come yet
	sets   bestSets
	eor    map[netip.Addr][]string // End-of-RIBs received in each neighbor's current session
	cancel context.CancelFunc
}

func (h *watchHub) add(sub *watcher) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[*watcher]bool{}
	}
	h.subs[sub] = true
	if h.cur == nil {
		return nil
	}
	return h.start(sub)
}

func (h *watchHub) remove(sub *watcher) {
	h.mu.Lock()
	delete(h.subs, sub)
	h.mu.Unlock()
	sub.mu.Lock()
	defer sub.mu.Unlock()
	sub.done = true
	if sub.st != nil {
		sub.st.cancel()
		sub.st = nil
	}
}

// attach starts watching bgp, a server that has just started, as the
// speaker of generation gen.
func (h *watchHub) attach(bgp *server.BgpServer, gen uint64) {
	h.detach()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur, h.gen = bgp, gen
	h.ctx, h.cancel = context.WithCancel(context.Background())
	for sub := range h.subs {
		if err := h.start(sub); err != nil {
			h.e.log.Error("watch the new speaker", "error", err)
		}
	}
}

// start makes sub's stream on the current server (h.mu held).
func (h *watchHub) start(sub *watcher) error {
	ctx, cancel := context.WithCancel(h.ctx)
	st := &stream{gen: h.gen, init: true, cancel: cancel}
	sub.mu.Lock()
	sub.st = st
	sub.mu.Unlock()
	opts := []server.WatchOption{server.WatchPeer()}
	if sub.wants&wantLearned != 0 {
		opts = append(opts, server.WatchBestPath(true), server.WatchEor(true))
	}
	err := h.cur.WatchEvent(ctx, server.WatchEventMessageCallbacks{
		OnPeerUpdate: func(ev *apiutil.WatchEventMessage_PeerEvent, _ time.Time) { h.onPeer(sub, st, ev) },
		OnBestPath:   func(paths []*apiutil.Path, _ time.Time) { sub.onBest(st, paths) },
		OnPathEor:    func(p *apiutil.Path, _ time.Time) { sub.onEor(st, p) },
	}, opts...)
	if err != nil {
		cancel()
	}
	return err
}

// regen: the running server is now the speaker of generation gen. Each
// watch re-bases where its stream is (docs/routes.md §9.1 rule 3).
func (h *watchHub) regen(gen uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == nil || gen == h.gen {
		return
	}
	h.gen = gen
	for sub := range h.subs {
		sub.rebase(gen)
	}
}

// detach ends the watches on the current server, reporting every session
// it left that was not idle: from now on none of its events is
// dispatched.
func (h *watchHub) detach() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cancel != nil {
		h.cancel()
	}
	h.cur, h.gen, h.ctx, h.cancel = nil, 0, nil, nil
	for sub := range h.subs {
		sub.stopped(h.e)
	}
}

// current is the server being watched (nil while stopped) and its
// generation.
func (h *watchHub) current() (*server.BgpServer, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur, h.gen
}

func (h *watchHub) onPeer(sub *watcher, st *stream, ev *apiutil.WatchEventMessage_PeerEvent) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.done || sub.st != st {
		return
	}
	st.peerState(ev)
	if sub.wants&wantSessions == 0 {
		return
	}
	if a, ok := h.e.sessionAction(ev, sub.last); ok {
		sub.last[a.Address] = a.State
		sub.dispatch(a)
	}
}

func (sub *watcher) onBest(st *stream, paths []*apiutil.Path) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.done || sub.st != st {
		return
	}
	first := st.init
	st.init = false
	if first {
		st.sets = bestSets{} // this server's sets start from its snapshot
	}
	a := st.sets.apply(paths)
	if st.gen == 0 || (len(a.Prefixes) == 0 && !first) {
		return
	}
	a.Gen, a.Init = st.gen, first
	sub.dispatch(a)
}

func (sub *watcher) onEor(st *stream, p *apiutil.Path) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.done || sub.st != st || p == nil || !p.PeerAddress.IsValid() {
		return
	}
	addr, family := p.PeerAddress.Unmap(), p.Family.String()
	if st.eor == nil {
		st.eor = map[netip.Addr][]string{}
	}
	if !slices.Contains(st.eor[addr], family) {
		st.eor[addr] = append(st.eor[addr], family)
	}
	if st.gen != 0 {
		sub.dispatch(state.EndOfRIBReceived{Gen: st.gen, Neighbor: addr, Family: family})
	}
}

// peerState forgets a neighbor's End-of-RIBs when its session is not
// established, as GoBGP does (it clears EndOfRibReceived when a session
// goes down, v4.8.0 pkg/server/server.go L1677-1685).
func (st *stream) peerState(ev *apiutil.WatchEventMessage_PeerEvent) {
	if ev == nil || ev.Type == apiutil.PEER_EVENT_END_OF_INIT || sessionStateName(ev.Peer.State.SessionState) == "established" {
		return
	}
	addr := ev.Peer.State.NeighborAddress
	if !addr.IsValid() {
		addr = ev.Peer.Conf.NeighborAddress
	}
	delete(st.eor, addr.Unmap())
}

// rebase: the stream's facts carry gen from now on. Once the stream has
// its snapshot, it dispatches its own as the new generation's, and the
// End-of-RIBs it holds, which is what a new WatchEvent would send first
// (WatchBestPath(true), WatchEor(true)); before that, GoBGP's snapshot is
// still to come and will carry gen.
func (sub *watcher) rebase(gen uint64) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	st := sub.st
	if sub.done || st == nil {
		return
	}
	st.gen = gen
	if sub.wants&wantLearned == 0 || st.init || gen == 0 {
		return
	}
	sub.dispatch(state.BestPathsChanged{Gen: gen, Init: true, Prefixes: st.sets.all()})
	for _, addr := range sortedKeys(st.eor) {
		for _, f := range slices.Sorted(slices.Values(st.eor[addr])) {
			sub.dispatch(state.EndOfRIBReceived{Gen: gen, Neighbor: addr, Family: f})
		}
	}
}

// stopped: the watched server stopped. Every session it left that was
// not idle is reported idle, "speaker stopped".
func (sub *watcher) stopped(e *Executor) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	sub.st = nil
	if sub.done || sub.wants&wantSessions == 0 {
		clear(sub.last)
		return
	}
	for _, addr := range sortedKeys(sub.last) {
		if sub.last[addr] == "idle" {
			continue
		}
		e.reasons.forget(addr)
		sub.dispatch(state.SessionStateChanged{Address: addr, State: "idle", Reason: "speaker stopped", At: e.now()})
	}
	clear(sub.last)
}

// sortedKeys lists m's addresses in order, so that reports are stable.
func sortedKeys[V any](m map[netip.Addr]V) []netip.Addr {
	out := make([]netip.Addr, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out
}
