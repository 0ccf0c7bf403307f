package effects

import (
	"fmt"
	"strings"

	"github.com/peeragent/peeragent/state"
)

// field is one speaker-visible neighbor setting. reset says whether
// applying a change of it drops the session, as measured by
// effects/gobgp's TestMeasureUpdateResets (docs/gobgp-updates.md) on
// GoBGP v4: UpdatePeer with a new password, AS, transport, family,
// AS-path options, graceful-restart or TTL settings (ttl-security and
// ebgp-multihop: unlike v3, which applied them in place) sends a Cease and
// starts over; it ignores route-reflector settings altogether, so the
// executor re-adds the peer, which resets too. So every neighbor setting
// resets its session; what changes in place is the neighbor's policy
// (filters, next hop), refreshed by a soft reset. This table is the single
// place that classification lives.
type field struct {
	name  string
	reset bool
	get   func(*state.Neighbor) string
}

// byValue compares, by field name, the values themselves where get shows
// less than the value: the password's fingerprint has 32 bits, and a
// rotation to a key that shares it must still be applied and reset the
// session.
var byValue = map[string]func(a, b *state.Neighbor) bool{
	"password": func(a, b *state.Neighbor) bool { return a.Password == b.Password },
}

var fields = []field{
	{"peerASN", true, func(n *state.Neighbor) string { return fmt.Sprint(n.PeerASN) }},
	{"localASN", true, func(n *state.Neighbor) string { return fmt.Sprint(n.LocalASN) }},
	{"password", true, func(n *state.Neighbor) string { return orNone(n.Password.Fingerprint()) }}, // byValue
	{"port", true, func(n *state.Neighbor) string { return fmt.Sprint(n.Port) }},
	{"sourceAddress", true, func(n *state.Neighbor) string { return addrOrDash(n.SourceAddress.String()) }},
	{"passive", true, func(n *state.Neighbor) string { return fmt.Sprint(n.Passive) }},
	{"families", true, func(n *state.Neighbor) string { return strings.Join(n.Families, ",") }},
	{"gracefulRestartSeconds", true, func(n *state.Neighbor) string { return fmt.Sprint(n.GracefulRestartSeconds) }},
	{"keepaliveSeconds", true, func(n *state.Neighbor) string { return fmt.Sprint(n.KeepaliveSeconds) }},
	{"allowOwnASN", true, func(n *state.Neighbor) string { return fmt.Sprint(n.AllowOwnASN) }},
	{"ttlMin", true, func(n *state.Neighbor) string { return fmt.Sprint(n.TTLMin) }},
	{"ebgpMultihopTTL", true, func(n *state.Neighbor) string { return fmt.Sprint(n.EBGPMultihopTTL) }},
	{"routeReflectorClient", true, func(n *state.Neighbor) string { return fmt.Sprint(n.RouteReflectorClient) }},
	{"routeReflectorClusterID", true, func(n *state.Neighbor) string { return orNone(n.RouteReflectorClusterID) }},
	// In place: GoBGP applies a new limit to the running session
	// (docs/gobgp-updates.md), which ends only if it is over the new one.
	{"maxPrefixes", false, func(n *state.Neighbor) string { return fmt.Sprint(n.MaxPrefixes) }},
}

func addrOrDash(s string) string {
	if s == "invalid IP" {
		return "none"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Classify lists the speaker-visible settings that differ between two
// configs of one neighbor, and whether applying them resets the session.
// Policy and VPP route changes are separate effects and never listed here.
func Classify(old, cur *state.Neighbor) (changes []Change, reset bool) {
	for _, f := range fields {
		a, b := f.get(old), f.get(cur)
		differ := a != b
		if same, ok := byValue[f.name]; ok {
			differ = !same(old, cur)
		}
		if !differ {
			continue
		}
		if a == b {
			b += " (another value)" // the same fingerprint
		}
		changes = append(changes, Change{Field: f.name, Old: a, New: b, Reset: f.reset})
		reset = reset || f.reset
	}
	return changes, reset
}

// ResetFields lists the settings whose change resets a session.
func ResetFields() (reset, inPlace []string) {
	for _, f := range fields {
		if f.reset {
			reset = append(reset, f.name)
		} else {
			inPlace = append(inPlace, f.name)
		}
	}
	return reset, inPlace
}

// Summary is a neighbor's config in one line, for AddPeer and the plan.
func Summary(n *state.Neighbor) string {
	var b strings.Builder
	fmt.Fprintf(&b, "as=%d local-as=%d port=%d origin=%s", n.PeerASN, n.LocalASN, n.Port, n.Origin)
	if n.Passive {
		b.WriteString(" passive")
	}
	if !n.Password.IsZero() {
		b.WriteString(" password=" + n.Password.Fingerprint())
	}
	if n.SourceAddress.IsValid() {
		b.WriteString(" source=" + n.SourceAddress.String())
	}
	if n.TTLMin != 0 {
		fmt.Fprintf(&b, " ttl-min=%d", n.TTLMin)
	}
	if n.EBGPMultihopTTL != 0 {
		fmt.Fprintf(&b, " multihop=%d", n.EBGPMultihopTTL)
	}
	if n.AllowOwnASN != 0 {
		fmt.Fprintf(&b, " allow-own-as=%d", n.AllowOwnASN)
	}
	if n.RouteReflectorClient {
		b.WriteString(" rr-client=" + n.RouteReflectorClusterID)
	}
	if n.KeepaliveSeconds != 0 {
		fmt.Fprintf(&b, " keepalive=%ds", n.KeepaliveSeconds)
	}
	if n.MaxPrefixes != state.DefaultMaxPrefixes {
		fmt.Fprintf(&b, " max-prefixes=%d", n.MaxPrefixes) // docs/routes.md §9.9
	}
	fmt.Fprintf(&b, " gr=%ds families=%s", n.GracefulRestartSeconds, strings.Join(n.Families, ","))
	return b.String()
}
