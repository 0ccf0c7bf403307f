package state

import (
	"net/netip"
	"slices"
)

// Neighbor is one BGP neighbor this node must have, fully resolved: every
// setting of docs/semantics.md §3 as plain data for the GoBGP executor.
type Neighbor struct {
	Address                netip.Addr    `json:"address"`
	Port                   uint16        `json:"port"`
	PeerASN                uint32        `json:"peerASN"`
	LocalASN               uint32        `json:"localASN"`
	Origin                 string        `json:"origin"`
	Passive                bool          `json:"passive"`
	Password               Password      `json:"password"`
	PasswordRef            *SecretKeyRef `json:"passwordRef,omitempty"`
	SourceAddress          netip.Addr    `json:"sourceAddress"`
	TTLMin                 uint8         `json:"ttlMin"`
	EBGPMultihopTTL        uint8         `json:"ebgpMultihopTTL"`
	GracefulRestartSeconds uint32        `json:"gracefulRestartSeconds"`
	// KeepaliveSeconds is the keepalive interval (BGPPeer keepaliveTime);
	// 0 is the speaker's default, a third of the hold time.
	KeepaliveSeconds        uint32     `json:"keepaliveSeconds"`
	AllowOwnASN             uint8      `json:"allowOwnASN"`
	RouteReflectorClient    bool       `json:"routeReflectorClient"`
	RouteReflectorClusterID string     `json:"routeReflectorClusterID"`
	Families                []string   `json:"families"`
	Filters                 []string   `json:"filters"`
	Policy                  Policy     `json:"policy"`
	ReachableBy             netip.Addr `json:"reachableBy"`
	// MaxPrefixes is the most routes the neighbor may send per address
	// family (docs/routes.md §9.9): one more and the speaker ends the
	// session with a Cease (maximum number of prefixes reached).
	MaxPrefixes uint32 `json:"maxPrefixes"`
	// Waiting, when set, holds the neighbor back: it is never configured
	// until what it names arrives ("secret ns/name key k").
	Waiting string `json:"waiting,omitempty"`
}

// Policy is a neighbor's own import and export policy, built from its
// BGPFilters (in the user's order) and its next-hop mode. Its statements
// are the neighbor's own; with CalicoExport they go on to reference the
// shared per-family prefix sets (docs/routes.md §8.3 rule 12).
type Policy struct {
	Import  []Rule `json:"import,omitempty"`
	Export  []Rule `json:"export,omitempty"`
	NextHop string `json:"nextHop,omitempty"` // "self", "keep" or "" (speaker default)
	// CalicoExport: after Export, Calico's base export rules and a final
	// reject (docs/routes.md §8.3 rules 4-10). Every neighbor has it
	// (docs/routes.md appendix C, C7).
	CalicoExport bool `json:"calicoExport,omitempty"`
}

// IsZero reports whether the policy has nothing to install.
func (p Policy) IsZero() bool {
	return len(p.Import) == 0 && len(p.Export) == 0 && p.NextHop == "" && !p.CalicoExport
}

// Equal compares two policies.
func (p Policy) Equal(o Policy) bool {
	return p.NextHop == o.NextHop && p.CalicoExport == o.CalicoExport &&
		slices.Equal(p.Import, o.Import) && slices.Equal(p.Export, o.Export)
}

// Rule is one compiled BGPFilter rule. A zero Prefix with FromRemotePeers
// false matches every route (Calico's unconditional rule).
type Rule struct {
	Filter          string       `json:"filter"`
	Action          string       `json:"action"` // "accept" or "reject"
	Prefix          netip.Prefix `json:"prefix,omitzero"`
	Operator        string       `json:"operator,omitempty"` // Equal, NotEqual, In, NotIn
	MinLen          uint8        `json:"minLen,omitempty"`
	MaxLen          uint8        `json:"maxLen,omitempty"`
	FromRemotePeers bool         `json:"fromRemotePeers,omitempty"`
}

// Active reports whether the neighbor is to be configured in the speaker.
func (n *Neighbor) Active() bool { return n != nil && n.Waiting == "" }

// Equal compares every field.
func (n *Neighbor) Equal(o *Neighbor) bool {
	if n == o {
		return true
	}
	if n == nil || o == nil {
		return false
	}
	return n.Address == o.Address && n.Port == o.Port && n.PeerASN == o.PeerASN &&
		n.LocalASN == o.LocalASN && n.Origin == o.Origin && n.Passive == o.Passive &&
		n.Password == o.Password && n.SourceAddress == o.SourceAddress &&
		n.TTLMin == o.TTLMin && n.EBGPMultihopTTL == o.EBGPMultihopTTL &&
		n.GracefulRestartSeconds == o.GracefulRestartSeconds && n.KeepaliveSeconds == o.KeepaliveSeconds &&
		n.AllowOwnASN == o.AllowOwnASN &&
		n.RouteReflectorClient == o.RouteReflectorClient &&
		n.RouteReflectorClusterID == o.RouteReflectorClusterID &&
		n.ReachableBy == o.ReachableBy && n.Waiting == o.Waiting && n.MaxPrefixes == o.MaxPrefixes &&
		slices.Equal(n.Families, o.Families) && slices.Equal(n.Filters, o.Filters) &&
		n.Policy.Equal(o.Policy) && refEqual(n.PasswordRef, o.PasswordRef)
}

func refEqual(a, b *SecretKeyRef) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// AddrKey is the key of an address in the neighbor, session and candidate
// maps: it sorts IPv4 before IPv6 and numerically within a family, so every
// listing comes out in address order.
func AddrKey(a netip.Addr) string {
	var buf [1 + 2*16]byte
	return string(appendAddrKey(buf[:0], a))
}

// appendAddrKey appends AddrKey(a) to b.
func appendAddrKey(b []byte, a netip.Addr) []byte {
	const hexdigits = "0123456789abcdef"
	if a.Is4() {
		b = append(b, '4')
		for _, c := range a.As4() {
			b = append(b, hexdigits[c>>4], hexdigits[c&15])
		}
		return b
	}
	b = append(b, '6')
	if !a.Is6() {
		return b // the zero Addr
	}
	for _, c := range a.As16() {
		b = append(b, hexdigits[c>>4], hexdigits[c&15])
	}
	return b
}

// SameConfig reports whether two neighbors ask the speaker for the same
// thing: Equal but for the bookkeeping fields (where the values came from:
// origin, secret and filter names), whose change alone needs no call, and
// ReachableBy, whose route is an entry of the route table
// (docs/routes.md §9.7 rule 3), not a speaker setting.
func (n *Neighbor) SameConfig(o *Neighbor) bool {
	if n == nil || o == nil {
		return n == o
	}
	a, b := *n, *o
	a.PasswordRef, b.PasswordRef, a.Filters, b.Filters = nil, nil, nil, nil
	a.Origin, b.Origin = "", ""
	a.ReachableBy, b.ReachableBy = netip.Addr{}, netip.Addr{}
	return a.Equal(&b)
}
