package gobgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	api "github.com/osrg/gobgp/v4/api"

	"github.com/peeragent/peeragent/state"
)

// The executor records the peers it configured: the settings GoBGP's
// UpdatePeer does not apply to a running session (the route-reflector
// settings and the keepalive interval, docs/gobgp-updates.md) as it gave
// them, and what deleting one needs (its AS, whether it has a password).
// The record is exact: the embedded speaker has no other writer, and the
// record is cleared whenever the speaker starts or stops. It spares an
// update, a delete and a policy refresh a ListPeer, which costs as much as
// the update itself (every GoBGP call waits on an event loop that is
// O(peers), and ListPeer compares every neighbor's address with the one
// asked for: 2.3 ms at 10,000 neighbors).
type reflector struct {
	client    bool
	cluster   string
	keepalive uint64
	asn       uint32 // the peer's AS, for dropPassword
	password  bool   // configured with a TCP-MD5 key
}

func reflectorOf(p *api.Peer) reflector {
	rr := p.GetRouteReflector()
	return reflector{client: rr.GetRouteReflectorClient(), cluster: rr.GetRouteReflectorClusterId(),
		keepalive: p.GetTimers().GetConfig().GetKeepaliveInterval(),
		asn:       p.GetConf().GetPeerAsn(), password: p.GetConf().GetAuthPassword() != ""}
}

// sameRR says whether two records have the same settings UpdatePeer does
// not apply to a running session (route reflection, keepalive), as the
// executor gave them.
func (r reflector) sameRR(o reflector) bool {
	return r.client == o.client && r.cluster == o.cluster && r.keepalive == o.keepalive
}

// addPeer configures a neighbor; one that is already there is updated
// instead, so that AddPeer is idempotent.
func (e *Executor) addPeer(ctx context.Context, n *state.Neighbor) error {
	p, err := e.peerConfig(ctx, n)
	if err != nil {
		return err
	}
	markRestarting(p, e.restarting)
	err = e.add(ctx, n.Address, p)
	if kindOf(err) == errExists {
		return e.update(ctx, n.Address, p)
	}
	return err
}

// peerFor is the package's peerFor, refusing a family the speaker's RIB
// lacks (Options.Families): GoBGP would negotiate it and drop its paths.
func (e *Executor) peerFor(n *state.Neighbor) (*api.Peer, error) {
	if len(e.families) > 0 {
		for _, f := range n.Families {
			if !slices.Contains(e.families, f) {
				return nil, fmt.Errorf("address family %s is not in the speaker's RIB (%s)", f, strings.Join(e.families, ", "))
			}
		}
	}
	return peerFor(n)
}

// add is GoBGP's AddPeer, recorded.
func (e *Executor) add(ctx context.Context, addr netip.Addr, p *api.Peer) error {
	if err := e.requireRunning(); err != nil {
		return err
	}
	err := e.bgp.AddPeer(ctx, &api.AddPeerRequest{Peer: p})
	if err == nil {
		e.peers[addr] = reflectorOf(p)
		e.applied[addr] = p
		e.gr.reset(addr)
	}
	return err
}

// updatePeer brings a configured neighbor to n. GoBGP decides itself
// whether the change needs a new session (see docs/gobgp-updates.md); an
// identical config changes nothing.
func (e *Executor) updatePeer(ctx context.Context, n *state.Neighbor) error {
	p, err := e.peerConfig(ctx, n)
	if err != nil {
		return err
	}
	return e.update(ctx, n.Address, p)
}

// peerConfig is what adding and updating n start with: n's GoBGP config,
// its password remembered, once the server runs and n is in or out of
// customNeighbors as its policy says (syncMember).
func (e *Executor) peerConfig(ctx context.Context, n *state.Neighbor) (*api.Peer, error) {
	p, err := e.peerFor(n)
	if err != nil {
		return nil, err
	}
	e.secrets.remember(n.Address, p.Conf.AuthPassword)
	if err := e.requireRunning(); err != nil {
		return nil, err
	}
	if err := e.syncMember(ctx, n.Address, n.Policy); err != nil {
		return nil, err
	}
	return p, nil
}

func (e *Executor) update(ctx context.Context, addr netip.Addr, p *api.Peer) error {
	cur, ok := e.peers[addr]
	switch {
	case !ok:
		// Not configured since the speaker started (the record is exact).
		err := e.add(ctx, addr, p)
		if kindOf(err) == errExists {
			return e.updateInPlace(ctx, addr, p)
		}
		return err
	case !cur.sameRR(reflectorOf(p)):
		// GoBGP's UpdatePeer silently ignores route-reflector settings
		// (measured: no reset, and ListPeer keeps the old values), and
		// applies a keepalive interval to its config only, not to the
		// running session (which keeps the one computed at OPEN), so the
		// only way to apply them is to configure the peer anew.
		if err := ignoreAbsent(e.bgp.DeletePeer(ctx, &api.DeletePeerRequest{Address: addr.String()})); err != nil {
			return err
		}
		delete(e.peers, addr)
		return e.add(ctx, addr, p)
	}
	return e.updateInPlace(ctx, addr, p)
}

// updateInPlace is GoBGP's UpdatePeer, for a peer whose route-reflector
// settings are already the wanted ones.
func (e *Executor) updateInPlace(ctx context.Context, addr netip.Addr, p *api.Peer) error {
	// NeedsSoftResetIn is ignored: it is set for policy and AS-path option
	// changes, and we never put policies on the peer while AS-path option
	// changes make GoBGP reset the session anyway.
	if err := e.requireRunning(); err != nil {
		return err
	}
	_, err := e.bgp.UpdatePeer(ctx, &api.UpdatePeerRequest{Peer: p})
	switch {
	case kindOf(err) == errAbsent:
		delete(e.peers, addr)
		return e.add(ctx, addr, p)
	case err == nil:
		e.peers[addr] = reflectorOf(p)
		e.applied[addr] = p
		return e.releaseLimited(ctx, addr)
	}
	return err
}

// releaseLimited lets a neighbor the speaker held down over its prefix
// limit connect again once its config changed (a new limit: GoBGP v4.8.0
// leaves such a peer administratively down for good, docs/routes.md §9.9).
func (e *Executor) releaseLimited(ctx context.Context, addr netip.Addr) error {
	held := false
	err := e.bgp.ListPeer(ctx, &api.ListPeerRequest{Address: addr.String()}, func(p *api.Peer) {
		held = p.GetState().GetAdminState() == api.PeerState_ADMIN_STATE_PFX_CT
	})
	if err != nil || !held {
		return ignoreAbsent(err)
	}
	return e.bgp.EnablePeer(ctx, &api.EnablePeerRequest{Address: addr.String()})
}

// deletePeer removes a neighbor; an absent one is success. What it needs
// to know of the peer (its AS and whether it has a password) comes from
// the record, not from a ListPeer.
func (e *Executor) deletePeer(ctx context.Context, addr netip.Addr) error {
	cur, ok := e.peers[addr]
	if !ok || e.bgp == nil {
		delete(e.peers, addr)
		return e.leave(ctx, addr)
	}
	if cur.password {
		if err := e.dropPassword(ctx, addr, cur.asn); err != nil {
			return err
		}
	}
	if err := ignoreAbsent(e.bgp.DeletePeer(ctx, &api.DeletePeerRequest{Address: addr.String()})); err != nil {
		return err
	}
	delete(e.peers, addr)
	delete(e.applied, addr)
	e.secrets.remember(addr, "")
	// Out of customNeighbors once gone (a policy kept for it puts it back
	// when it is configured again).
	return e.leave(ctx, addr)
}

// dropPassword takes a peer's MD5 key off GoBGP's listening sockets.
// GoBGP's DeletePeer clears it only when the request carries the password,
// which a DeletePeerRequest cannot: the key would stay, and the kernel
// would drop the unsigned connections of a neighbor re-added at that
// address without a password (measured by TestPairReAddWithoutPassword).
// UpdatePeer to a config without a password clears it, as GoBGP deletes
// the old peer with its own config first; the peer is deleted right after.
func (e *Executor) dropPassword(ctx context.Context, addr netip.Addr, asn uint32) error {
	_, err := e.bgp.UpdatePeer(ctx, &api.UpdatePeerRequest{Peer: &api.Peer{
		Conf:      &api.PeerConf{NeighborAddress: addr.String(), PeerAsn: asn},
		Transport: &api.Transport{PassiveMode: true}, // never dial in the meantime
	}})
	return err
}
