package gobgp

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"google.golang.org/protobuf/proto"
)

// Graceful-restart state dies with its session (docs/routes.md §9.5 rule
// 3). GoBGP v4.8.0 sets a neighbor's graceful-restart state when a
// session's OPEN carries the capability and never clears it
// (pkg/server/fsm.go L696-711: PeerRestartTime and each listed family's
// MpGracefulRestart.State.Enabled/Received are written only when the
// capability is there; the long-lived ones likewise, L711-735), so after a
// later session without it (or listing fewer families) drops, GoBGP still
// keeps the peer's routes for the old restart time. grBook notices such a
// session, and when it ends the executor configures the neighbor anew,
// which drops that state: the routes go at once, as for a peer that never
// offered graceful restart. Nothing changes while the session is up.
type grBook struct {
	mu    sync.Mutex
	seen  map[netip.Addr][]string // families any session of the configured peer listed
	stale map[netip.Addr]bool     // the current session listed fewer
	cur   map[netip.Addr]grSession
}

// grSession is what the current session's OPEN offered for graceful
// restart: the restart time and the families of each capability.
type grSession struct {
	restart   uint32
	families  []string // "ipv4-unicast"...
	longLived bool     // some family listed for long-lived graceful restart
}

// reset: the neighbor at addr was configured anew; GoBGP holds no state.
func (b *grBook) reset(addr netip.Addr) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.seen, addr)
	delete(b.stale, addr)
	delete(b.cur, addr)
}

// established records the graceful-restart families of a new session's
// OPEN (caps: what the peer sent).
func (b *grBook) established(addr netip.Addr, caps []bgp.ParameterCapabilityInterface) {
	cur := grFamilies(caps)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen == nil {
		b.seen, b.stale, b.cur = map[netip.Addr][]string{}, map[netip.Addr]bool{}, map[netip.Addr]grSession{}
	}
	b.cur[addr] = grSessionOf(caps)
	seen := b.seen[addr]
	b.stale[addr] = false
	for _, f := range seen {
		if !slices.Contains(cur, f) {
			b.stale[addr] = true
		}
	}
	for _, f := range cur {
		if !slices.Contains(seen, f) {
			seen = append(seen, f)
		}
	}
	b.seen[addr] = seen
}

// ended reports, once, whether the session at addr that has just ended
// ran with graceful-restart state of an earlier session, and what it
// offered for graceful restart.
func (b *grBook) ended(addr netip.Addr) (bool, grSession) {
	b.mu.Lock()
	defer b.mu.Unlock()
	stale, cur := b.stale[addr], b.cur[addr]
	delete(b.stale, addr)
	delete(b.cur, addr)
	return stale, cur
}

// grSessionOf reads a peer's OPEN (its capabilities).
func grSessionOf(caps []bgp.ParameterCapabilityInterface) grSession {
	var g grSession
	for _, c := range caps {
		switch x := c.(type) {
		case *bgp.CapGracefulRestart:
			g.restart = uint32(x.Time)
			for _, t := range x.Tuples {
				g.families = append(g.families, bgp.NewFamily(t.AFI, t.SAFI).String())
			}
		case *bgp.CapLongLivedGracefulRestart:
			g.longLived = g.longLived || len(x.Tuples) > 0
		}
	}
	return g
}

// grFamilies are the families a peer's OPEN lists in its graceful-restart
// and long-lived graceful-restart capabilities, prefixed "gr " and "llgr ".
func grFamilies(caps []bgp.ParameterCapabilityInterface) []string {
	var out []string
	for _, c := range caps {
		switch x := c.(type) {
		case *bgp.CapGracefulRestart:
			for _, t := range x.Tuples {
				out = append(out, "gr "+bgp.NewFamily(t.AFI, t.SAFI).String())
			}
		case *bgp.CapLongLivedGracefulRestart:
			for _, t := range x.Tuples {
				out = append(out, "llgr "+bgp.NewFamily(t.AFI, t.SAFI).String())
			}
		}
	}
	return out
}

// recreateTimeout bounds the calls that configure a neighbor anew.
const recreateTimeout = 10 * time.Second

// recreateConnectRetry is the connect retry of a neighbor configured
// anew: GoBGP's floor (minConnectRetryInterval, v4.8.0 pkg/server/fsm.go
// L47), not connectRetrySeconds. Its peer is expected back within
// seconds; where this node dials it (the peer is passive toward it), the
// first dial, 1.5-2 s after the AddPeer, often comes before the restarted
// peer listens, and the next one waits the connect retry (fsm.go L967):
// with 5 s the mesh at N=50 re-converged in 8.7 s, 99 dials refused.
const recreateConnectRetry = 2

// recreateStale is recreate for a session that ran with graceful-restart
// state of an earlier one (docs/routes.md §9.5 rule 3). It runs on its own
// goroutine, after the session watch's callback has returned.
func (e *Executor) recreateStale(addr netip.Addr) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.recreate(addr, "GoBGP kept graceful-restart state of an earlier session")
}

// recreate configures the neighbor at addr anew with the config last
// applied: DeletePeer, then AddPeer, unless it is gone or Established (a
// new session is up already). Its new FSM starts without GoBGP's idle hold
// (docs/routes.md §9.5 rule 2) and with no graceful-restart state of the
// old sessions (rule 3). The restart this node announced when it started
// (markRestarting, §9.6 rule 7) is over by now: the new config does not
// announce it again, nor defer this node's updates; and it dials again
// every recreateConnectRetry. Its passivity stays Calico's: one side of a
// mesh pair dials, so no collision can happen (a survivor that also
// dialed where it is passive made 68 collisions, 3 refused connections and
// a slower re-convergence at N=50: docs/performance.md). e.mu held.
func (e *Executor) recreate(addr netip.Addr, why string) {
	p, ok := e.applied[addr]
	if !ok || e.bgp == nil {
		return
	}
	if cur, ok, err := e.currentPeer(context.Background(), addr); err != nil || !ok ||
		cur.GetState().GetSessionState() == api.PeerState_SESSION_STATE_ESTABLISHED {
		return
	}
	p = proto.Clone(p).(*api.Peer)
	if gr := p.GetGracefulRestart(); gr != nil {
		gr.LocalRestarting, gr.DeferralTime = false, 0
	}
	if t := p.GetTimers().GetConfig(); t != nil {
		t.ConnectRetry = recreateConnectRetry
	}
	ctx, cancel := context.WithTimeout(context.Background(), recreateTimeout)
	defer cancel()
	e.log.Info("neighbor configured anew: "+why, "neighbor", addr)
	if err := ignoreAbsent(e.bgp.DeletePeer(ctx, &api.DeletePeerRequest{Address: addr.String()})); err != nil {
		e.log.Error("configure neighbor anew: delete", "neighbor", addr, "error", e.secrets.scrub(err.Error()))
		return
	}
	delete(e.peers, addr)
	if err := e.add(ctx, addr, p); err != nil {
		e.log.Error("configure neighbor anew: add", "neighbor", addr, "error", e.secrets.scrub(err.Error()))
	}
}

// currentPeer is the speaker's view of one neighbor. ListPeer compares every
// neighbor's address (O(neighbors)): only recreate, a rare path, asks it;
// the hot paths read the executor's record instead (docs/performance.md).
func (e *Executor) currentPeer(ctx context.Context, addr netip.Addr) (*api.Peer, bool, error) {
	if e.bgp == nil {
		return nil, false, nil
	}
	var found *api.Peer
	err := e.bgp.ListPeer(ctx, &api.ListPeerRequest{Address: addr.String()}, func(p *api.Peer) { found = p })
	return found, found != nil, err
}
