package gobgp

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	api "github.com/osrg/gobgp/v4/api"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/peeragent/peeragent/state"
)

var (
	v4Unicast = &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}
	v6Unicast = &api.Family{Afi: api.Family_AFI_IP6, Safi: api.Family_SAFI_UNICAST}
	mpGR      = &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}}
	calicoGR  = &api.GracefulRestart{Enabled: true, RestartTime: 120, NotificationEnabled: true, LonglivedEnabled: true}
)

func baseNeighbor() *state.Neighbor {
	return &state.Neighbor{
		Address: netip.MustParseAddr("10.0.0.2"), Port: 179, PeerASN: 64513, LocalASN: 64512,
		SourceAddress: netip.MustParseAddr("10.0.0.1"), EBGPMultihopTTL: 255,
		GracefulRestartSeconds: 120, Families: []string{"ipv4-unicast"},
	}
}

func basePeer() *api.Peer {
	return &api.Peer{
		Conf:            &api.PeerConf{NeighborAddress: "10.0.0.2", PeerAsn: 64513, LocalAsn: 64512},
		Transport:       &api.Transport{RemotePort: 179, LocalAddress: "10.0.0.1"},
		Timers:          &api.Timers{Config: &api.TimersConfig{ConnectRetry: 5, IdleHoldTimeAfterReset: 1}},
		GracefulRestart: calicoGR,
		EbgpMultihop:    &api.EbgpMultihop{Enabled: true, MultihopTtl: 255},
		TtlSecurity:     &api.TtlSecurity{},
		RouteReflector:  &api.RouteReflector{},
		AfiSafis:        []*api.AfiSafi{{Config: &api.AfiSafiConfig{Family: v4Unicast, Enabled: true}, MpGracefulRestart: mpGR}},
	}
}

// TestPeerFor pins the mapping of every neighbor setting of docs/semantics.md
// §3 to GoBGP's api.Peer.
func TestPeerFor(t *testing.T) {
	tests := []struct {
		name string
		edit func(*state.Neighbor)
		want func(*api.Peer)
	}{
		{"ebgp-calico-defaults", func(*state.Neighbor) {}, func(*api.Peer) {}},
		{"password-is-revealed-to-gobgp", func(n *state.Neighbor) { n.Password = state.NewPassword("s3cret") },
			func(p *api.Peer) { p.Conf.AuthPassword = "s3cret" }},
		{"remote-port-and-passive", func(n *state.Neighbor) { n.Port, n.Passive = 1790, true },
			func(p *api.Peer) { p.Transport.RemotePort, p.Transport.PassiveMode = 1790, true }},
		{"source-address-none", func(n *state.Neighbor) { n.SourceAddress = netip.Addr{} },
			func(p *api.Peer) { p.Transport.LocalAddress = "" }},
		{"ttl-security-replaces-multihop", func(n *state.Neighbor) { n.TTLMin, n.EBGPMultihopTTL = 254, 0 },
			func(p *api.Peer) {
				p.TtlSecurity = &api.TtlSecurity{Enabled: true, TtlMin: 254}
				p.EbgpMultihop = &api.EbgpMultihop{}
			}},
		{"ibgp-has-no-multihop", func(n *state.Neighbor) { n.PeerASN, n.EBGPMultihopTTL = 64512, 0 },
			func(p *api.Peer) { p.Conf.PeerAsn, p.EbgpMultihop = 64512, &api.EbgpMultihop{} }},
		{"allow-own-as", func(n *state.Neighbor) { n.AllowOwnASN = 3 },
			func(p *api.Peer) { p.Conf.AllowOwnAsn = 3 }},
		{"route-reflector-client", func(n *state.Neighbor) { n.RouteReflectorClient, n.RouteReflectorClusterID = true, "224.0.0.1" },
			func(p *api.Peer) {
				p.RouteReflector = &api.RouteReflector{RouteReflectorClient: true, RouteReflectorClusterId: "224.0.0.1"}
			}},
		{"graceful-restart-time", func(n *state.Neighbor) { n.GracefulRestartSeconds = 300 },
			func(p *api.Peer) {
				p.GracefulRestart = &api.GracefulRestart{Enabled: true, RestartTime: 300, NotificationEnabled: true, LonglivedEnabled: true}
			}},
		{"graceful-restart-time-clamped-to-12-bits", func(n *state.Neighbor) { n.GracefulRestartSeconds = 5000 },
			func(p *api.Peer) {
				p.GracefulRestart = &api.GracefulRestart{Enabled: true, RestartTime: 4095, NotificationEnabled: true, LonglivedEnabled: true}
			}},
		{"keepalive-time", func(n *state.Neighbor) { n.KeepaliveSeconds = 10 },
			func(p *api.Peer) { p.Timers.Config.KeepaliveInterval = 10 }},
		{"graceful-restart-off", func(n *state.Neighbor) { n.GracefulRestartSeconds = 0 },
			func(p *api.Peer) {
				p.GracefulRestart = &api.GracefulRestart{}
				p.AfiSafis[0].MpGracefulRestart = nil
			}},
		{"ipv6-with-extra-family", func(n *state.Neighbor) {
			n.Address, n.SourceAddress = netip.MustParseAddr("fd00::2"), netip.MustParseAddr("fd00::1")
			n.Families = []string{"ipv6-unicast", "l3vpn-ipv6-unicast"}
		}, func(p *api.Peer) {
			p.Conf.NeighborAddress, p.Transport.LocalAddress = "fd00::2", "fd00::1"
			p.AfiSafis = []*api.AfiSafi{
				{Config: &api.AfiSafiConfig{Family: v6Unicast, Enabled: true}, MpGracefulRestart: mpGR},
				{Config: &api.AfiSafiConfig{Family: &api.Family{Afi: api.Family_AFI_IP6, Safi: api.Family_SAFI_MPLS_VPN}, Enabled: true}},
			}
		}},
		{"prefix-limit-on-every-family", func(n *state.Neighbor) {
			n.MaxPrefixes, n.Families = 500, []string{"ipv4-unicast", "ipv4-srpolicy"}
		}, func(p *api.Peer) {
			sr := &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_SR_POLICY}
			p.AfiSafis[0].PrefixLimits = &api.PrefixLimit{Family: v4Unicast, MaxPrefixes: 500}
			p.AfiSafis = append(p.AfiSafis, &api.AfiSafi{Config: &api.AfiSafiConfig{Family: sr, Enabled: true},
				PrefixLimits: &api.PrefixLimit{Family: sr, MaxPrefixes: 500}})
		}},
		{"sr-policy-family", func(n *state.Neighbor) { n.Families = []string{"ipv4-unicast", "ipv4-srpolicy"} },
			func(p *api.Peer) {
				p.AfiSafis = append(p.AfiSafis, &api.AfiSafi{Config: &api.AfiSafiConfig{
					Family: &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_SR_POLICY}, Enabled: true}})
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, want := baseNeighbor(), basePeer()
			tc.edit(n)
			tc.want(want)
			got, err := peerFor(n)
			if err != nil {
				t.Fatalf("peerFor: %v", err)
			}
			if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
				t.Errorf("api.Peer (-want +got):\n%s", d)
			}
		})
	}
}

func TestPeerForUnknownFamily(t *testing.T) {
	n := baseNeighbor()
	n.Families = []string{"ipv4-unicast", "ipv4-bogus"}
	_, err := peerFor(n)
	if err == nil || !strings.Contains(err.Error(), `unknown address family "ipv4-bogus"`) {
		t.Fatalf("want an unknown-family error, got %v", err)
	}
}

func TestSameReflector(t *testing.T) {
	rr := func(client bool, id string) *api.Peer {
		return &api.Peer{RouteReflector: &api.RouteReflector{RouteReflectorClient: client, RouteReflectorClusterId: id}}
	}
	tests := []struct {
		name      string
		cur, want *api.Peer
		same      bool
	}{
		{"both-not-clients", rr(false, ""), rr(false, ""), true},
		{"becomes-client", rr(false, ""), rr(true, "1.2.3.4"), false},
		{"stops-being-client", rr(true, "1.2.3.4"), rr(false, ""), false},
		{"same-cluster", rr(true, "1.2.3.4"), rr(true, "1.2.3.4"), true},
		{"other-cluster", rr(true, "1.2.3.4"), rr(true, "1.2.3.5"), false},
		{"numeric-cluster-as-gobgp-shows-it", rr(true, "0.0.1.0"), rr(true, "256"), true},
		{"default-cluster-is-router-id", rr(true, "10.0.0.1"), rr(true, ""), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sameReflector(tc.cur, tc.want); got != tc.same {
				t.Errorf("sameReflector = %v, want %v", got, tc.same)
			}
		})
	}
}
