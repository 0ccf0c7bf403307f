// Command v4 is the GoBGP floor (../floor.go) on GoBGP v4 (the release go.mod, or -modfile go.v47.mod / go.v43.mod, says).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/server"

	floor "github.com/peeragent/peeragent/tools/gobgpfloor"
)

// v4 is a GoBGP v4 speaker. Keep it line for line the same as v3/main.go
// apart from the import path and the logger.
type v4 struct {
	s    *server.BgpServer
	fams []*api.AfiSafi
}

func main() { floor.Main(newSpeaker) }

func newSpeaker(families []string) (floor.Speaker, error) {
	lv := new(slog.LevelVar)
	lv.Set(slog.LevelError)
	s := server.NewBgpServer(server.LoggerOption(slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: lv})), lv))
	go s.Serve()
	if err := s.StartBgp(context.Background(), &api.StartBgpRequest{Global: &api.Global{
		Asn: floor.LocalASN, RouterId: "10.255.255.1", ListenPort: -1}}); err != nil {
		return nil, err
	}
	sp := &v4{s: s}
	for _, f := range families {
		fam := &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}
		switch f {
		case "ipv4":
		case "ipv6":
			fam.Afi = api.Family_AFI_IP6
		default:
			return nil, fmt.Errorf("unknown family %q", f)
		}
		sp.fams = append(sp.fams, &api.AfiSafi{Config: &api.AfiSafiConfig{Family: fam, Enabled: true}})
	}
	return sp, nil
}

func (sp *v4) peer(addr string, asn uint32, hold uint64) *api.Peer {
	return &api.Peer{
		Conf:      &api.PeerConf{NeighborAddress: addr, PeerAsn: asn},
		Transport: &api.Transport{PassiveMode: true},
		Timers:    &api.Timers{Config: &api.TimersConfig{HoldTime: hold, KeepaliveInterval: hold / 3}},
		AfiSafis:  sp.fams,
	}
}

func (sp *v4) AddPeer(addr string, asn uint32, hold uint64) error {
	return sp.s.AddPeer(context.Background(), &api.AddPeerRequest{Peer: sp.peer(addr, asn, hold)})
}

func (sp *v4) UpdatePeer(addr string, asn uint32, hold uint64) error {
	_, err := sp.s.UpdatePeer(context.Background(), &api.UpdatePeerRequest{Peer: sp.peer(addr, asn, hold)})
	return err
}

func (sp *v4) DeletePeer(addr string) error {
	return sp.s.DeletePeer(context.Background(), &api.DeletePeerRequest{Address: addr})
}

func (sp *v4) HoldTime(addr string) (uint64, error) {
	var h uint64
	err := sp.s.ListPeer(context.Background(), &api.ListPeerRequest{Address: addr}, func(p *api.Peer) {
		h = p.GetTimers().GetConfig().GetHoldTime()
	})
	return h, err
}

func (sp *v4) Stop() error {
	return sp.s.StopBgp(context.Background(), &api.StopBgpRequest{})
}
