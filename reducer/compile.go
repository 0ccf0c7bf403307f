package reducer

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/peeragent/peeragent/selector"
	"github.com/peeragent/peeragent/state"
)

// compilePeer parses a BGPPeer once, at upsert, so that derivation only
// evaluates. Every reason it is unusable becomes a problem on the peer.
func compilePeer(p *state.BGPPeer) (*state.PeerEntry, []state.Problem) {
	e := &state.PeerEntry{Spec: p}
	obj := bgpPeerObject(p.Name)
	var probs []state.Problem
	bad := func(format string, args ...any) {
		probs = append(probs, state.Problem{Object: obj, Reason: fmt.Sprintf(format, args...)})
	}
	if p.Node != "" && p.NodeSelector != "" {
		bad("node and nodeSelector are both set")
	}
	if p.PeerSelector != "" && p.ASNumber != 0 {
		bad("peerSelector and asNumber are both set (the AS of a selected node is its own)")
	}
	if p.PeerSelector != "" && p.PeerIP != "" {
		bad("peerIP and peerSelector are both set")
	}
	e.NodeSel = parseSel(p.NodeSelector, "nodeSelector", bad)
	e.PeerSel = parseSel(p.PeerSelector, "peerSelector", bad)
	compilePeerIP(e, bad)
	if p.LocalASNumber != 0 {
		e.LocalASN = checkASN(p.LocalASNumber, "localASNumber", bad)
	}
	if p.TTLSecurity < 0 || p.TTLSecurity > 254 {
		bad("ttlSecurity %d out of range 0-254", p.TTLSecurity)
	}
	if p.NumAllowedLocalASNumbers < 0 || p.NumAllowedLocalASNumbers > 10 {
		bad("numAllowedLocalASNumbers %d out of range 0-10", p.NumAllowedLocalASNumbers)
	}
	checkEnums(p, bad)
	if p.ReachableBy != "" {
		a, err := netip.ParseAddr(p.ReachableBy)
		if err != nil || a.Zone() != "" {
			bad("reachableBy %q is not an IP address", p.ReachableBy)
		}
		e.Reach = a.Unmap()
	}
	e.Valid = len(probs) == 0
	return e, probs
}

func compilePeerIP(e *state.PeerEntry, bad func(string, ...any)) {
	p := e.Spec
	switch {
	case p.PeerSelector != "":
		return
	case p.PeerIP == "":
		bad("neither peerIP nor peerSelector is set")
		return
	}
	ip, port, err := parsePeerIP(p.PeerIP)
	if err != nil {
		bad("%v", err)
		return
	}
	e.IP, e.Port = ip, port
	if p.ASNumber == 0 {
		bad("asNumber is required with peerIP")
		return
	}
	e.ASN = checkASN(p.ASNumber, "asNumber", bad)
}

// parsePeerIP reads IP, IPv4:port or [IPv6]:port. Hostnames are refused:
// the agent never resolves DNS for a peer.
func parsePeerIP(s string) (netip.Addr, uint16, error) {
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return a.Unmap(), 0, nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil || ap.Addr().Zone() != "" {
		return netip.Addr{}, 0, fmt.Errorf("peerIP %q is not an IP, IPv4:port or [IPv6]:port (hostnames are not resolved)", s)
	}
	if ap.Port() == 0 {
		return netip.Addr{}, 0, fmt.Errorf("peerIP %q has port 0", s)
	}
	return ap.Addr().Unmap(), ap.Port(), nil
}

func parseSel(text, field string, bad func(string, ...any)) state.Matcher {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	s, err := selector.Parse(text)
	if err != nil {
		bad("%s: %v", field, err)
		return nil
	}
	return s
}

func checkASN(v int64, field string, bad func(string, ...any)) uint32 {
	if v < 1 || v > 4294967295 {
		bad("%s %d out of range 1-4294967295", field, v)
		return 0
	}
	return uint32(v)
}

func checkEnums(p *state.BGPPeer, bad func(string, ...any)) {
	switch p.SourceAddress {
	case "", "UseNodeIP", "None":
	default:
		bad("sourceAddress %q is not UseNodeIP or None", p.SourceAddress)
	}
	switch p.NextHopMode {
	case "", "Auto", "Self", "Keep":
	default:
		bad("nextHopMode %q is not Auto, Self or Keep", p.NextHopMode)
	}
	switch p.ReversePeering {
	case "", "Auto", "Manual":
	default:
		bad("reversePeering %q is not Auto or Manual", p.ReversePeering)
	}
}

// compileNode parses a node's Calico annotations. A malformed annotation is
// a problem and is treated as absent; the rest of the node still counts.
func compileNode(n *state.Node) (*state.NodeEntry, []state.Problem) {
	e := &state.NodeEntry{Spec: n, ClusterID: n.RRClusterID}
	var probs []state.Problem
	bad := func(format string, args ...any) {
		probs = append(probs, state.Problem{Object: nodeObject(n.Name), Reason: fmt.Sprintf(format, args...)})
	}
	e.V4 = parseNodeAddr(n.IPv4Address, true, "projectcalico.org/IPv4Address", bad)
	e.V6 = parseNodeAddr(n.IPv6Address, false, "projectcalico.org/IPv6Address", bad)
	if n.ASNumber != "" {
		v, err := strconv.ParseInt(strings.TrimSpace(n.ASNumber), 10, 64)
		if err != nil {
			bad("annotation projectcalico.org/ASNumber %q is not a number", n.ASNumber)
		} else {
			e.ASN = checkASN(v, "annotation projectcalico.org/ASNumber", bad)
		}
	}
	if n.RRClusterID != "" {
		if a, err := netip.ParseAddr(n.RRClusterID); err != nil || !a.Is4() {
			bad("annotation projectcalico.org/RouteReflectorClusterID %q is not an IPv4 address", n.RRClusterID)
			e.ClusterID = ""
		}
	}
	return e, probs
}

func parseNodeAddr(s string, v4 bool, field string, bad func(string, ...any)) netip.Addr {
	if s == "" {
		return netip.Addr{}
	}
	var a netip.Addr
	p, err := netip.ParsePrefix(s)
	if err == nil {
		a = p.Addr()
	} else if a, err = netip.ParseAddr(s); err != nil {
		bad("annotation %s %q is not an address in CIDR form", field, s)
		return netip.Addr{}
	}
	a = a.Unmap()
	if a.Is4() != v4 || a.Zone() != "" {
		bad("annotation %s %q is in the wrong address family", field, s)
		return netip.Addr{}
	}
	return a
}
