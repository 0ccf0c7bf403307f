package gobgp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/peeragent/peeragent/state"
)

// maxRestartTime is the largest restart time the graceful-restart
// capability can carry (a 12-bit field, RFC 4724); GoBGP would silently
// truncate a larger one.
const maxRestartTime = 4095

// connectRetrySeconds is how long a neighbor waits between connection
// attempts: Calico's BIRD template says `connect retry time 5`. GoBGP's
// default, 120 s (randomised to 90–120 s), kept a restarted node's mesh
// sessions down for minutes: the node is the passive side toward higher
// addresses, and the peer waited out its retry timer.
const connectRetrySeconds = 5

// idleHoldSeconds is how long a neighbor stays idle after an
// administrative reset before connecting again (GoBGP's default is 30 s).
const idleHoldSeconds = 1

// peerFor maps a neighbor to GoBGP's api.Peer (docs/semantics.md §3). It is the
// only place a password is revealed.
func peerFor(n *state.Neighbor) (*api.Peer, error) {
	fams, err := afiSafis(n.Families, n.GracefulRestartSeconds > 0, n.MaxPrefixes)
	if err != nil {
		return nil, err
	}
	p := &api.Peer{
		Conf: &api.PeerConf{
			NeighborAddress: n.Address.String(),
			PeerAsn:         n.PeerASN,
			LocalAsn:        n.LocalASN,
			AuthPassword:    n.Password.Reveal(),
			AllowOwnAsn:     uint32(n.AllowOwnASN),
		},
		Transport: &api.Transport{
			RemotePort:  uint32(n.Port),
			PassiveMode: n.Passive,
		},
		Timers: &api.Timers{Config: &api.TimersConfig{
			ConnectRetry:           connectRetrySeconds,
			IdleHoldTimeAfterReset: idleHoldSeconds,
			KeepaliveInterval:      uint64(n.KeepaliveSeconds), // 0: GoBGP's, a third of the hold time
		}},
		GracefulRestart: gracefulRestart(n.GracefulRestartSeconds),
		EbgpMultihop:    &api.EbgpMultihop{},
		TtlSecurity:     &api.TtlSecurity{},
		RouteReflector:  &api.RouteReflector{},
		AfiSafis:        fams,
	}
	if n.SourceAddress.IsValid() {
		p.Transport.LocalAddress = n.SourceAddress.String()
	}
	// GoBGP refuses both at once; the reducer never derives both.
	if n.TTLMin > 0 {
		p.TtlSecurity = &api.TtlSecurity{Enabled: true, TtlMin: uint32(n.TTLMin)}
	}
	if n.EBGPMultihopTTL > 0 {
		p.EbgpMultihop = &api.EbgpMultihop{Enabled: true, MultihopTtl: uint32(n.EBGPMultihopTTL)}
	}
	if n.RouteReflectorClient {
		id, err := validClusterID(n.RouteReflectorClusterID)
		if err != nil {
			return nil, err
		}
		p.RouteReflector = &api.RouteReflector{RouteReflectorClient: true, RouteReflectorClusterId: id}
	}
	return p, nil
}

// gracefulRestart is Calico's template: restart time, notification
// (RFC 8538) and long-lived GR all on; zero seconds turns GR off.
func gracefulRestart(secs uint32) *api.GracefulRestart {
	if secs == 0 {
		return &api.GracefulRestart{}
	}
	return &api.GracefulRestart{
		Enabled:             true,
		RestartTime:         min(secs, maxRestartTime),
		NotificationEnabled: true,
		LonglivedEnabled:    true,
	}
}

// afiSafis enables each named family. The unicast ones carry the
// multiprotocol graceful-restart flag (as Calico/VPP's agent does); the
// extra families (VPN, SR policy) do not.
//
// Each carries the neighbor's prefix limit (docs/routes.md §9.9): GoBGP
// v4.8.0 counts the family's Adj-RIB-In after each UPDATE
// (pkg/server/peer.go isPrefixLimit) and, over the limit, sends a Cease
// with subcode "maximum number of prefixes reached" and sets the peer
// administratively down (server.go setAdminState adminStatePfxCt), where
// it stays: its PrefixLimit RestartTimer is never read.
func afiSafis(names []string, gr bool, maxPrefixes uint32) ([]*api.AfiSafi, error) {
	out := make([]*api.AfiSafi, 0, len(names))
	for _, name := range names {
		fam, err := family(name)
		if err != nil {
			return nil, err
		}
		a := &api.AfiSafi{Config: &api.AfiSafiConfig{Family: fam, Enabled: true}}
		if maxPrefixes > 0 {
			a.PrefixLimits = &api.PrefixLimit{Family: fam, MaxPrefixes: maxPrefixes}
		}
		if gr && fam.Safi == api.Family_SAFI_UNICAST {
			a.MpGracefulRestart = &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}}
		}
		out = append(out, a)
	}
	return out, nil
}

// family reads GoBGP's own family names ("ipv4-unicast", "l3vpn-ipv6-unicast",
// "ipv4-srpolicy"...), which are the names the State uses.
func family(name string) (*api.Family, error) {
	f, err := bgp.GetFamily(name)
	if err != nil {
		return nil, fmt.Errorf("unknown address family %q", name)
	}
	return &api.Family{Afi: api.Family_Afi(f.Afi()), Safi: api.Family_Safi(f.Safi())}, nil
}

// unicastFamily is the family a neighbor's filter rules apply to.
func unicastFamily(a netip.Addr) *api.Family {
	if a.Is4() {
		return &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}
	}
	return &api.Family{Afi: api.Family_AFI_IP6, Safi: api.Family_SAFI_UNICAST}
}

// sameReflector reports whether the speaker's peer has the wanted
// route-reflector settings and keepalive interval (the settings UpdatePeer
// does not apply to a running session). GoBGP reports the effective cluster ID (its
// router ID when none is set, a number as a dotted quad), so compare that.
func sameReflector(cur, want *api.Peer) bool {
	if keepaliveOf(cur) != keepaliveOf(want) {
		return false
	}
	c, w := cur.GetRouteReflector(), want.GetRouteReflector()
	if c.GetRouteReflectorClient() != w.GetRouteReflectorClient() {
		return false
	}
	if !w.GetRouteReflectorClient() || w.GetRouteReflectorClusterId() == "" {
		return true
	}
	return c.GetRouteReflectorClusterId() == clusterID(w.GetRouteReflectorClusterId())
}

// keepaliveOf is a peer's configured keepalive interval, GoBGP's default
// (a third of the hold time, 30 s) for 0, as ListPeer reports it.
func keepaliveOf(p *api.Peer) uint64 {
	c := p.GetTimers().GetConfig()
	if k := c.GetKeepaliveInterval(); k != 0 {
		return k
	}
	hold := c.GetHoldTime()
	if hold == 0 {
		hold = 90 // GoBGP's DEFAULT_HOLDTIME
	}
	return hold / 3
}

// validClusterID checks a route-reflector cluster ID and gives it as
// GoBGP v4 wants it: a dotted quad (a 32-bit number is turned into one),
// or "" for GoBGP's default (the router ID). GoBGP v4 silently ignores a
// cluster ID it cannot parse (v3 refused it), so the check is ours.
func validClusterID(id string) (string, error) {
	if id == "" {
		return "", nil
	}
	c := clusterID(id)
	if a, err := netip.ParseAddr(c); err != nil || !a.Is4() {
		return "", fmt.Errorf("route-reflector-cluster-id should be specified as IPv4 address or 32-bit unsigned integer")
	}
	return c, nil
}

// clusterID normalises a cluster ID the way GoBGP v3 did: a 32-bit number
// becomes a dotted quad.
func clusterID(id string) string {
	if n, err := strconv.ParseUint(id, 10, 32); err == nil {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(n))
		return netip.AddrFrom4(b).String()
	}
	return id
}
