package status

import (
	"net/netip"
	"sort"
	"strings"
	"time"

	v3 "github.com/projectcalico/api/pkg/apis/projectcalico/v3"

	"github.com/peeragent/peeragent/state"
)

// Desired is what a CalicoNodeStatus asking for classes should hold for s,
// lastUpdated aside. The Agent class gets the speaker's state in both
// daemon slots (one GoBGP speaker serves both families; Calico's names
// come from BIRD), the BGP class the neighbors by family, the Routes class
// the route table as calico-node reports BIRD's (routes.go).
func Desired(s state.State, classes []v3.NodeStatusClassType, version string) v3.CalicoNodeStatusStatus {
	var out v3.CalicoNodeStatusStatus
	for _, c := range classes {
		switch c {
		case v3.NodeStatusClassTypeAgent:
			d := daemon(s, version)
			out.Agent = v3.CalicoNodeAgentStatus{BIRDV4: d, BIRDV6: d}
		case v3.NodeStatusClassTypeBGP:
			out.BGP = bgp(s)
		case v3.NodeStatusClassTypeRoutes:
			out.Routes = routes(s)
		}
	}
	return out
}

func daemon(s state.State, version string) v3.BGPDaemonStatus {
	d := v3.BGPDaemonStatus{State: v3.BGPDaemonStateNotReady, Version: version}
	if s.Server.RouterID.IsValid() {
		d.RouterID = s.Server.RouterID.String()
	}
	if _, failed := s.Out.Problems.Get("server"); s.Server.ASN != 0 && d.RouterID != "" && !failed {
		d.State = v3.BGPDaemonStateReady
	}
	return d
}

func bgp(s state.State) v3.CalicoNodeBGPStatus {
	var b v3.CalicoNodeBGPStatus
	s.Out.Neighbors.Range(func(k string, n *state.Neighbor) bool {
		p := v3.CalicoNodePeer{PeerIP: n.Address.String(), Type: peerType(s, n.Origin), State: v3.BGPSessionStateIdle}
		if sess, ok := s.Out.Sessions.Get(k); ok {
			p.State = sessionState(sess.BGP)
			if !sess.Since.IsZero() {
				p.Since = sess.Since.UTC().Format(time.RFC3339)
			}
		}
		up := p.State == v3.BGPSessionStateEstablished
		if n.Address.Is4() {
			b.PeersV4 = append(b.PeersV4, p)
			count(&b.NumberEstablishedV4, &b.NumberNotEstablishedV4, up)
		} else {
			b.PeersV6 = append(b.PeersV6, p)
			count(&b.NumberEstablishedV6, &b.NumberNotEstablishedV6, up)
		}
		return true
	})
	byAddr := func(ps []v3.CalicoNodePeer) func(i, j int) bool {
		return func(i, j int) bool {
			a, _ := netip.ParseAddr(ps[i].PeerIP)
			c, _ := netip.ParseAddr(ps[j].PeerIP)
			return a.Less(c)
		}
	}
	sort.SliceStable(b.PeersV4, byAddr(b.PeersV4))
	sort.SliceStable(b.PeersV6, byAddr(b.PeersV6))
	return b
}

func count(up, down *int, established bool) {
	if established {
		*up++
	} else {
		*down++
	}
}

// peerType is Calico's type of a neighbor by its origin: the mesh, a
// BGPPeer for some nodes (node or nodeSelector set, or another node's peer
// selecting this one in reverse) or a global BGPPeer.
func peerType(s state.State, origin string) v3.BGPPeerType {
	if strings.HasPrefix(origin, "reverse/") {
		return v3.BGPPeerTypeNodePeer
	}
	name, ok := strings.CutPrefix(origin, string(state.KindBGPPeer)+"/")
	if !ok {
		return v3.BGPPeerTypeNodeMesh
	}
	if p, ok := s.Inputs.Peers.Get(name); ok && p.Spec != nil && (p.Spec.Node != "" || p.Spec.NodeSelector != "") {
		return v3.BGPPeerTypeNodePeer
	}
	return v3.BGPPeerTypeGlobalPeer
}

// sessionState is the speaker's state in Calico's spelling; before any
// report a neighbor is Idle.
func sessionState(bgp string) v3.BGPSessionState {
	for _, st := range []v3.BGPSessionState{v3.BGPSessionStateIdle, v3.BGPSessionStateConnect,
		v3.BGPSessionStateActive, v3.BGPSessionStateOpenSent, v3.BGPSessionStateOpenConfirm,
		v3.BGPSessionStateEstablished} {
		if strings.EqualFold(bgp, string(st)) {
			return st
		}
	}
	return v3.BGPSessionStateIdle
}
