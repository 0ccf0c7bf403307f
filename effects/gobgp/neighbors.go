package gobgp

import (
	"context"
	"net/netip"
	"slices"

	api "github.com/osrg/gobgp/v4/api"

	"github.com/peeragent/peeragent/state"
)

// Neighbor is one neighbor as the speaker itself holds it (GoBGP's
// ListPeer), for tests and diagnostics that must not take the agent's
// State for the speaker's word. It carries no password text, only the
// fingerprint state.Password shows.
type Neighbor struct {
	Address  netip.Addr
	PeerASN  uint32
	LocalASN uint32
	Port     uint16
	Passive  bool
	Password string // fingerprint ("hmac:..."), "" without one
	Session  string // idle, connect, active, opensent, openconfirm, established
}

// Neighbors lists the speaker's neighbors, sorted by address; none while
// the server is stopped.
func (e *Executor) Neighbors(ctx context.Context) ([]Neighbor, error) {
	e.mu.Lock()
	bgp := e.bgp
	e.mu.Unlock()
	if bgp == nil {
		return nil, nil
	}
	var out []Neighbor
	err := bgp.ListPeer(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
		addr, err := netip.ParseAddr(p.GetConf().GetNeighborAddress())
		if err != nil {
			return
		}
		out = append(out, Neighbor{Address: addr,
			PeerASN: p.GetConf().GetPeerAsn(), LocalASN: p.GetConf().GetLocalAsn(),
			Port: uint16(p.GetTransport().GetRemotePort()), Passive: p.GetTransport().GetPassiveMode(),
			Password: state.NewPassword(p.GetConf().GetAuthPassword()).Fingerprint(),
			Session:  apiSessionStateName(p.GetState().GetSessionState())})
	})
	if kindOf(err) == errAbsent {
		return nil, nil
	}
	slices.SortFunc(out, func(a, b Neighbor) int { return a.Address.Compare(b.Address) })
	return out, err
}
