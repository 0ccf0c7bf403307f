package reducer

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

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
	checkUnsupported(p.Unsupported, bad)
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
	if p.MaxRestartTime != nil {
		checkRestartTime(p.MaxRestartTime.Duration, "maxRestartTime", bad)
	}
	if p.KeepaliveTime != nil {
		checkKeepalive(p.KeepaliveTime.Duration, bad)
	}
	if p.ReachableBy != "" {
		a, err := netip.ParseAddr(p.ReachableBy)
		if err != nil || a.Zone() != "" {
			bad("reachableBy %q is not an IP address", p.ReachableBy)
		}
		e.Reach = a.Unmap()
		checkReach(e, bad)
	}
	e.Valid = len(probs) == 0
	// After Valid: a bad annotation is a problem, never a reason to drop
	// the peer (its neighbors keep --max-prefixes).
	e.MaxPrefixes = checkMaxPrefixes(p.Annotations, bad)
	return e, probs
}

// checkMaxPrefixes reads the annotation AnnotationMaxPrefixes
// (docs/routes.md §9.9): a whole number of routes from 1 to 4294967295, as
// --max-prefixes takes. Absent or invalid, 0: the flag's limit applies.
// Zero is refused rather than read as "no limit": every neighbor has one.
func checkMaxPrefixes(ann map[string]string, bad func(string, ...any)) uint32 {
	text, ok := ann[state.AnnotationMaxPrefixes]
	if !ok {
		return 0
	}
	n, err := strconv.ParseUint(text, 10, 32)
	if err != nil || n == 0 {
		bad("annotation %s %q is not a whole number of routes from 1 to 4294967295: its neighbors keep the --max-prefixes limit",
			state.AnnotationMaxPrefixes, text)
		return 0
	}
	return uint32(n)
}

// checkReach refuses a reachableBy gateway no route can use: one of the
// other family than the peerIP (Calico's validator refuses it, and confd
// skips such a peer), or one on a peer without a peerIP (Calico's CRD
// refuses it).
func checkReach(e *state.PeerEntry, bad func(string, ...any)) {
	switch {
	case !e.Reach.IsValid():
	case e.Spec.PeerIP == "":
		bad("reachableBy is set without a peerIP")
	case e.IP.IsValid() && e.IP.Is4() != e.Reach.Is4():
		bad("reachableBy %s is not of the peerIP %s's address family", e.Reach, e.IP)
	}
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
	if why := specialAddr(ip); why != "" {
		bad("peerIP %q is %s: no neighbor can have it", p.PeerIP, why)
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
	var port uint16
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return netip.Addr{}, 0, fmt.Errorf("peerIP %q is not an IP, IPv4:port or [IPv6]:port (hostnames are not resolved)", s)
		}
		if ap.Port() == 0 {
			return netip.Addr{}, 0, fmt.Errorf("peerIP %q has port 0", s)
		}
		a, port = ap.Addr(), ap.Port()
	}
	if a.Zone() != "" {
		return netip.Addr{}, 0, fmt.Errorf("peerIP %q has an IPv6 zone (%%%s); a neighbor is named by its address alone", s, a.Zone())
	}
	return a.Unmap(), port, nil
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

// nodeAnnotations are the Calico annotations of a Node, as fields of state.Node.
var nodeAnnotations = []struct {
	name string
	text func(*state.Node) *string
}{
	{"projectcalico.org/IPv4Address", func(n *state.Node) *string { return &n.IPv4Address }},
	{"projectcalico.org/IPv6Address", func(n *state.Node) *string { return &n.IPv6Address }},
	{"projectcalico.org/ASNumber", func(n *state.Node) *string { return &n.ASNumber }},
	{"projectcalico.org/RouteReflectorClusterID", func(n *state.Node) *string { return &n.RRClusterID }},
}

// compileNode parses a node's Calico annotations. A malformed annotation is
// a problem and is treated as absent; the rest of the node still counts.
// With prev (this node's previous entry), a malformed annotation keeps
// prev's value instead (docs/semantics.md §7: a typo never restarts the speaker
// with a default): Spec then holds that value's text, Rejected the node.
func compileNode(n *state.Node, prev *state.NodeEntry) (*state.NodeEntry, []state.Problem) {
	e, probs := parseNode(n)
	if prev == nil || len(probs) == 0 {
		return e, probs
	}
	spec, kept := *n, false
	for _, f := range nodeAnnotations {
		probe := state.Node{Name: n.Name}
		*f.text(&probe) = *f.text(n)
		last := *f.text(prev.Spec)
		if _, bad := parseNode(&probe); len(bad) == 0 || last == "" {
			continue
		}
		*f.text(&spec), kept = last, true
		probs = append(probs, state.Problem{Object: "node/" + n.Name, Reason: fmt.Sprintf(
			"annotation %s: keeping its last valid version %q until it is fixed", f.name, last)})
	}
	if !kept {
		return e, probs
	}
	e, _ = parseNode(&spec)
	e.Rejected = n
	return e, probs
}

func parseNode(n *state.Node) (*state.NodeEntry, []state.Problem) {
	e := &state.NodeEntry{Spec: n, ClusterID: n.RRClusterID}
	var probs []state.Problem
	bad := func(format string, args ...any) {
		probs = append(probs, state.Problem{Object: nodeObject(n.Name), Reason: fmt.Sprintf(format, args...)})
	}
	e.V4 = parseNodeAddr(n.IPv4Address, true, "projectcalico.org/IPv4Address", bad)
	e.V6 = parseNodeAddr(n.IPv6Address, false, "projectcalico.org/IPv6Address", bad)
	if n.ASNumber != "" {
		v, err := parseASNumber(strings.TrimSpace(n.ASNumber))
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

// parseASNumber reads an AS number as libcalico-go reads the node
// annotation (numorstring.ASNumberFromString): asplain ("65546"), or asdot
// ("1.10" is 1<<16 + 10), each half 0-65535. Range is checked by checkASN.
func parseASNumber(s string) (int64, error) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	hi, lo, ok := strings.Cut(s, ".")
	if !ok {
		return 0, strconv.ErrSyntax
	}
	h, err1 := strconv.ParseUint(hi, 10, 16)
	l, err2 := strconv.ParseUint(lo, 10, 16)
	if err1 != nil || err2 != nil {
		return 0, strconv.ErrSyntax
	}
	return int64(h<<16 | l), nil
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
	if a.Zone() != "" {
		bad("annotation %s %q has an IPv6 zone; a node address has none", field, s)
		return netip.Addr{}
	}
	if a.Is4() != v4 {
		bad("annotation %s %q is in the wrong address family", field, s)
		return netip.Addr{}
	}
	return a
}

// specialAddr says why no BGP neighbor can have address a ("" when one can):
// unspecified, multicast or the limited broadcast address.
func specialAddr(a netip.Addr) string {
	switch {
	case a.IsUnspecified():
		return "the unspecified address"
	case a.IsMulticast():
		return "a multicast address"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "the limited broadcast address"
	}
	return ""
}

// maxRestartTime is the largest graceful-restart time BGP can carry: the
// Restart Time field of the capability has 12 bits (RFC 4724).
const maxRestartTime = 4095 * time.Second

// checkRestartTime refuses what cannot be a graceful-restart time, after
// Calico's rounding to the nearest whole second.
func checkRestartTime(d time.Duration, field string, bad func(string, ...any)) {
	switch r := restartSeconds(d); {
	case d < 0:
		bad("%s %s is negative", field, d)
	case r > maxRestartTime:
		bad("%s %s is over %ds, the most a BGP graceful-restart time can be", field, d, int(maxRestartTime/time.Second))
	}
}

// restartSeconds rounds a duration to the nearest whole second, as Calico
// converts it for BIRD (500ms is 1s, not 0, which would turn graceful
// restart off).
func restartSeconds(d time.Duration) time.Duration { return d.Round(time.Second) }

// holdTime is the hold time the speaker offers every neighbor (GoBGP's
// default; BIRD's is 240 s): a keepalive interval must stay below it.
const holdTime = 90 * time.Second

// checkKeepalive refuses what cannot be a keepalive interval, after
// Calico's rounding to the nearest whole second: 0 s (BIRD refuses it too:
// "Keepalive time must be in range 1-65535"), and a value not below the
// hold time, at which the peer's hold timer would expire between two
// keepalives (BIRD refuses one above its own 240 s hold time).
func checkKeepalive(d time.Duration, bad func(string, ...any)) {
	switch r := restartSeconds(d); {
	case d < 0:
		bad("keepaliveTime %s is negative", d)
	case r < time.Second:
		bad("keepaliveTime %s rounds to 0s; the least is 1s", d)
	case r >= holdTime:
		bad("keepaliveTime %s is not below the %ds hold time this agent uses", d, int(holdTime/time.Second))
	}
}

// checkUnsupported names the fields a source found that this agent does
// not support: applying the object without them would do something else
// than asked, so it is invalid (docs/semantics.md §7).
func checkUnsupported(fields []string, bad func(string, ...any)) {
	if len(fields) > 0 {
		bad("unsupported field %s: this agent cannot apply it, so the object is not used", strings.Join(fields, ", "))
	}
}
