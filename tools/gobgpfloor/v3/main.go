// Command v3 is the GoBGP floor (../floor.go) on GoBGP v3.37.0.
package main

import (
	"context"
	"fmt"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/log"
	"github.com/osrg/gobgp/v3/pkg/server"

	floor "github.com/peeragent/peeragent/tools/gobgpfloor"
)

// v3 is a GoBGP v3 speaker. Keep it line for line the same as v4/main.go
// apart from the import path and the logger.
type v3 struct {
	s    *server.BgpServer
	fams []*api.AfiSafi
}

func main() { floor.Main(newSpeaker) }

func newSpeaker(families []string) (floor.Speaker, error) {
	s := server.NewBgpServer(server.LoggerOption(quiet{}))
	go s.Serve()
	if err := s.StartBgp(context.Background(), &api.StartBgpRequest{Global: &api.Global{
		Asn: floor.LocalASN, RouterId: "10.255.255.1", ListenPort: -1}}); err != nil {
		return nil, err
	}
	sp := &v3{s: s}
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

func (sp *v3) peer(addr string, asn uint32, hold uint64) *api.Peer {
	return &api.Peer{
		Conf:      &api.PeerConf{NeighborAddress: addr, PeerAsn: asn},
		Transport: &api.Transport{PassiveMode: true},
		Timers:    &api.Timers{Config: &api.TimersConfig{HoldTime: hold, KeepaliveInterval: hold / 3}},
		AfiSafis:  sp.fams,
	}
}

func (sp *v3) AddPeer(addr string, asn uint32, hold uint64) error {
	return sp.s.AddPeer(context.Background(), &api.AddPeerRequest{Peer: sp.peer(addr, asn, hold)})
}

func (sp *v3) UpdatePeer(addr string, asn uint32, hold uint64) error {
	_, err := sp.s.UpdatePeer(context.Background(), &api.UpdatePeerRequest{Peer: sp.peer(addr, asn, hold)})
	return err
}

func (sp *v3) DeletePeer(addr string) error {
	return sp.s.DeletePeer(context.Background(), &api.DeletePeerRequest{Address: addr})
}

func (sp *v3) HoldTime(addr string) (uint64, error) {
	var h uint64
	err := sp.s.ListPeer(context.Background(), &api.ListPeerRequest{Address: addr}, func(p *api.Peer) {
		h = p.GetTimers().GetConfig().GetHoldTime()
	})
	return h, err
}

func (sp *v3) Stop() error {
	return sp.s.StopBgp(context.Background(), &api.StopBgpRequest{})
}

// quiet drops GoBGP's log messages (the v4 speaker's level is Error,
// discarded).
type quiet struct{}

func (quiet) Panic(msg string, _ log.Fields) { panic(msg) }
func (quiet) Fatal(msg string, _ log.Fields) { panic(msg) }
func (quiet) Error(string, log.Fields)       {}
func (quiet) Warn(string, log.Fields)        {}
func (quiet) Info(string, log.Fields)        {}
func (quiet) Debug(string, log.Fields)       {}
func (quiet) SetLevel(log.LogLevel)          {}
func (quiet) GetLevel() log.LogLevel         { return log.ErrorLevel }
