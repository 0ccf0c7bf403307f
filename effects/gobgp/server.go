package gobgp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"

	api "github.com/osrg/gobgp/v3/api"

	"github.com/peeragent/peeragent/state"
)

var errNotRunning = errors.New("bgp server hasn't started yet")

// startMu serialises StartBgp across executors: GoBGP v3's StartBgp
// writes package variables (table.SelectionOptions, UseMultiplePaths), a
// data race when two embedded servers start at once. Reads of them during
// best-path selection are not covered, so one process should run one
// speaker at a time, as the agent does (tests run theirs one test at a time).
var startMu sync.Mutex

// startServer starts the speaker with srv. Started with the same config
// already, it does nothing; with another, it restarts.
func (e *Executor) startServer(ctx context.Context, srv state.Server) error {
	if e.running != nil && *e.running == srv {
		return nil
	}
	if e.running != nil {
		if err := e.stopServer(ctx); err != nil {
			return err
		}
	}
	startMu.Lock()
	err := e.bgp.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn:             srv.ASN,
		RouterId:        routerID(srv.RouterID),
		ListenPort:      int32(srv.ListenPort),
		ListenAddresses: e.listen,
	}})
	startMu.Unlock()
	if err != nil {
		// StartBgp opens its listeners one by one and leaves the ones it
		// opened when a later one fails; close them so a retry can bind.
		_ = e.bgp.StopBgp(ctx, &api.StopBgpRequest{})
		return err
	}
	s := srv
	e.running = &s
	// StartBgp re-initialises GoBGP's policy tables: nothing is installed.
	e.policies = map[netip.Addr]installed{}
	e.peers = map[netip.Addr]reflector{}
	return nil
}

// stopServer stops the speaker: every peer goes, with its session.
// Stopping a stopped speaker is success.
func (e *Executor) stopServer(ctx context.Context) error {
	if err := e.bgp.StopBgp(ctx, &api.StopBgpRequest{}); err != nil {
		return err
	}
	e.running = nil
	e.policies = map[netip.Addr]installed{}
	e.peers = map[netip.Addr]reflector{}
	return nil
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
