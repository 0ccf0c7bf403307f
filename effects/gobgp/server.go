package gobgp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/config/oc"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/peeragent/peeragent/state"
)

var errNotRunning = errors.New("bgp server hasn't started yet")

// startServer starts the speaker with srv as the speaker of generation gen
// (docs/routes.md §9.1). Started with the same config already, it does
// nothing but follow a new gen; with another, it restarts.
//
// A GoBGP v4 BgpServer serves once: StopBgp ends its event loop for good
// (Serve closes a channel it never re-creates), so every start is a new
// BgpServer. That also means nothing survives a restart by accident: no
// listener, no policy, no MD5 key on a listening socket.
//
// Before binding, it looks for another BGP speaker on the port, and a
// port already taken is that too (otherSpeaker, portTaken): one problem
// naming it, never a race for the port.
func (e *Executor) startServer(ctx context.Context, srv state.Server, gen uint64) error {
	if e.running != nil && *e.running == srv {
		if gen != 0 {
			e.watches.regen(gen) // a new snapshot under the new generation
		}
		return nil
	}
	if e.running != nil {
		if err := e.stopServer(ctx, false); err != nil {
			return err
		}
	}
	if err := otherSpeaker(ctx, e.listen, srv.RouterID, uint16(srv.ListenPort)); err != nil {
		return err
	}
	e.epoch++
	bgp := server.NewBgpServer(e.serverOptions()...)
	go bgp.Serve()
	err := bgp.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn:             srv.ASN,
		RouterId:        routerID(srv.RouterID),
		ListenPort:      int32(srv.ListenPort),
		ListenAddresses: e.listenOn(srv),
		Families:        ribFamilies(e.families),
		// Equal-best sets (docs/routes.md §9.4). GoBGP keeps this in a
		// package global (table.UseMultiplePaths) that every server in
		// the process reads: every start sets it the same way.
		UseMultiplePaths: true,
	}})
	if err != nil {
		// StartBgp opens its listeners one by one and leaves the ones it
		// opened when a later one fails; stopping closes them (and ends
		// this server's loop) so that a retry can bind.
		_ = bgp.StopBgp(context.Background(), &api.StopBgpRequest{})
		e.stopGRPC(bgp)
		return portTaken(err, uint16(srv.ListenPort))
	}
	if err := addShared(ctx, bgp); err != nil {
		_ = bgp.StopBgp(context.Background(), &api.StopBgpRequest{})
		return err
	}
	s := srv
	e.bgp, e.running = bgp, &s
	e.policies = map[netip.Addr]installed{}
	e.members = map[netip.Addr]bool{}
	e.comm = newCommBook()
	e.peers = map[netip.Addr]reflector{}
	e.applied = map[netip.Addr]*api.Peer{}
	e.watches.attach(bgp, gen)
	return nil
}

// stopServer stops the speaker: every peer goes, with its session.
// graceful leaves out the NOTIFICATION to neighbors that negotiated
// graceful restart, so that they keep this node's routes (as stale) until
// it comes back (RFC 4724); a hard stop tells every neighbor. Stopping a
// stopped speaker is success.
func (e *Executor) stopServer(ctx context.Context, graceful bool) error {
	if e.bgp == nil {
		return nil
	}
	err := e.bgp.StopBgp(ctx, &api.StopBgpRequest{AllowGracefulRestart: graceful})
	e.stopGRPC(e.bgp)
	// Whatever StopBgp said, this server is done with: its loop ends with
	// the request, and a new start makes a new server.
	e.watches.detach()
	e.bgp, e.running = nil, nil
	e.policies = map[netip.Addr]installed{}
	e.members = map[netip.Addr]bool{}
	e.comm = newCommBook()
	e.peers = map[netip.Addr]reflector{}
	e.applied = map[netip.Addr]*api.Peer{}
	return err
}

func (e *Executor) requireRunning() error {
	if e.running == nil {
		return errNotRunning
	}
	return nil
}

// routerID leaves an unset router ID empty, so that GoBGP's own error
// ("invalid router-id format") names the problem.
func routerID(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

func describeServer(srv state.Server) string {
	return fmt.Sprintf("AS %d, router ID %s, port %d", srv.ASN, routerID(srv.RouterID), srv.ListenPort)
}

// Speaker is the running GoBGP server, nil while stopped: for tests and
// diagnostics that read the speaker's own tables. Writing to it behind
// the executor's back breaks the executor's records.
func (e *Executor) Speaker() *server.BgpServer {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.bgp
}

// listenOn is where the speaker listens: the node's addresses under
// bindMode NodeIP (docs/semantics.md §1), else --bgp-listen-address's, else
// every address.
func (e *Executor) listenOn(srv state.Server) []string {
	if l := srv.Listen(); l != nil {
		return l
	}
	return e.listen
}

// ribFamilies are GoBGP's numbers of the families named (api.Global's
// Families); nil (every family) when none is.
func ribFamilies(names []string) []uint32 {
	var out []uint32
	for _, n := range names {
		if i, ok := oc.AfiSafiTypeToIntMap[oc.AfiSafiType(n)]; ok {
			out = append(out, uint32(i))
		}
	}
	return out
}
