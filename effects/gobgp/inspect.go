package gobgp

import (
	"context"
	"net/netip"
	"slices"
	"strings"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/peeragent/peeragent/effects"
)

var _ effects.Inspector = (*Executor)(nil)

// Inspect reads the running speaker's neighbors (effects.Inspector).
// It finds the speaker through the session hub, not the executor's lock,
// which is held for a whole Execute batch: a scrape or a status request
// never waits for one.
func (e *Executor) Inspect(ctx context.Context, addr netip.Addr, advertised bool) ([]effects.NeighborInfo, error) {
	bgp := e.current()
	if bgp == nil {
		return nil, nil
	}
	req := &api.ListPeerRequest{EnableAdvertised: advertised}
	if addr.IsValid() {
		req.Address = addr.String()
	}
	var out []effects.NeighborInfo
	err := bgp.ListPeer(ctx, req, func(p *api.Peer) {
		if info, ok := neighborInfo(p, advertised); ok {
			out = append(out, info)
		}
	})
	if kindOf(err) == errAbsent {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b effects.NeighborInfo) int { return a.Address.Compare(b.Address) })
	return out, nil
}

func neighborInfo(p *api.Peer, advertised bool) (effects.NeighborInfo, bool) {
	st := p.GetState()
	a, err := netip.ParseAddr(p.GetConf().GetNeighborAddress())
	if err != nil {
		if a, err = netip.ParseAddr(st.GetNeighborAddress()); err != nil {
			return effects.NeighborInfo{}, false
		}
	}
	info := effects.NeighborInfo{Address: a.Unmap(), State: apiSessionStateName(st.GetSessionState()),
		RouterID: st.GetRouterId(), LocalCapabilities: capNames(st.GetLocalCap()),
		RemoteCapabilities: capNames(st.GetRemoteCap())}
	if m := st.GetMessages(); m != nil {
		info.MessagesReceived = m.GetReceived().GetTotal()
		info.MessagesSent = m.GetSent().GetTotal()
	}
	if t := p.GetTimers(); t != nil {
		info.HoldTime, info.KeepaliveInterval = t.GetConfig().GetHoldTime(), t.GetConfig().GetKeepaliveInterval()
		info.ConnectRetry = t.GetConfig().GetConnectRetry()
		info.NegotiatedHoldTime = t.GetState().GetNegotiatedHoldTime()
		if u := t.GetState().GetUptime(); u != nil && u.GetSeconds() > 0 {
			info.Uptime = u.AsTime()
		}
		if d := t.GetState().GetDowntime(); d != nil && d.GetSeconds() > 0 {
			info.Downtime = d.AsTime()
		}
	}
	var adv uint64
	for _, f := range p.GetAfiSafis() {
		s := f.GetState()
		info.Received += s.GetReceived()
		info.Accepted += s.GetAccepted()
		adv += s.GetAdvertised()
	}
	if advertised {
		info.Advertised = &adv
	}
	return info, true
}

// capNames names capabilities after their field in GoBGP's API
// ("route-refresh"), multi-protocol ones with their family.
func capNames(caps []*api.Capability) []string {
	var out []string
	for _, c := range caps {
		m := c.ProtoReflect()
		od := m.Descriptor().Oneofs().ByName("cap")
		if od == nil {
			continue
		}
		fd := m.WhichOneof(od)
		if fd == nil {
			continue
		}
		name := strings.ReplaceAll(string(fd.Name()), "_", "-")
		if mp := c.GetMultiProtocol(); mp != nil {
			name += " " + familyText(mp.GetFamily())
		}
		out = append(out, name)
	}
	return out
}

func familyText(f *api.Family) string {
	afi := strings.ToLower(strings.TrimPrefix(f.GetAfi().String(), "AFI_"))
	safi := strings.ToLower(strings.TrimPrefix(f.GetSafi().String(), "SAFI_"))
	return strings.ReplaceAll(afi+"-"+safi, "_", "-")
}

// current is the running speaker (nil while stopped), as the watches
// last attached it.
func (e *Executor) current() *server.BgpServer {
	bgp, _ := e.watches.current()
	return bgp
}
