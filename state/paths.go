package state

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// AffinityEntry is one of this node's BlockAffinities with its parsed parts
// (docs/routes.md §8.1 rule 1). Own is false when the affinity does not make
// the block N's (pending, deleted, another type, or bad input).
type AffinityEntry struct {
	Spec  *BlockAffinity
	Block netip.Prefix // masked; zero when the CIDR does not parse
	Own   bool
}

// PoolEntry is an IPPool with its parsed CIDR (zero when it does not parse
// or is refused: the pool is then ignored, docs/routes.md §11.2); Refused
// says why a CIDR that parses is refused.
type PoolEntry struct {
	Spec    *IPPool
	CIDR    netip.Prefix
	Refused string
}

// PodEntry is a Pod of this node with the addresses it may lend out
// (docs/routes.md §8.1 rule 3): none for a host-network or finished pod.
type PodEntry struct {
	Spec  *Pod
	Addrs []netip.Prefix // host prefixes (/32, /128), sorted
}

// Path is one own path: what GoBGP originates (docs/routes.md §8.2).
// Origins name the objects that produce it ("blockaffinity/NAME",
// "pod/NS/NAME"); they are bookkeeping, not attributes.
type Path struct {
	Prefix      netip.Prefix `json:"prefix"`
	NextHop     netip.Addr   `json:"nextHop"`
	Communities []string     `json:"communities"`
	Origins     []string     `json:"origins"`
}

// SameAttrs reports whether two paths ask the speaker for the same thing:
// a change of origins alone needs no call (docs/routes.md §8.1 rule 7).
func (p *Path) SameAttrs(o *Path) bool {
	if p == nil || o == nil {
		return p == o
	}
	return p.Prefix == o.Prefix && p.NextHop == o.NextHop && slices.Equal(p.Communities, o.Communities)
}

// Equal compares every field.
func (p *Path) Equal(o *Path) bool {
	return p.SameAttrs(o) && (p == nil || slices.Equal(p.Origins, o.Origins))
}

// Family is "ipv4-unicast" or "ipv6-unicast": the neighbors the path goes
// to (docs/routes.md §8.2 rule 4).
func (p *Path) Family() string { return PrefixFamily(p.Prefix) }

// PrefixFamily is the unicast family of a prefix.
func PrefixFamily(p netip.Prefix) string {
	if p.Addr().Is4() {
		return "ipv4-unicast"
	}
	return "ipv6-unicast"
}

// The shared prefix sets of the export policy (docs/routes.md §8.3 rule 12),
// one per family: name + "v4" or "v6".
const (
	SetOwn   = "peeragent-own-"   // own blocks, lengths block..full
	SetNoBGP = "peeragent-nobgp-" // disableBGPExport pools, lengths pool..full
	SetPools = "peeragent-pools-" // export-enabled pools, lengths pool..full
	SetSvc   = "peeragent-svc-"   // service ranges this node advertises, lengths range..full
	SetRRSvc = "peeragent-rrsvc-" // on a reflector: serviceLoadBalancerIPs and serviceExternalIPs, lengths cidr..full
	// SetComm + V + "-": per community value V of the prefixAdvertisements
	// in force, every CIDR whose entry lists V, lengths cidr..full
	// (docs/routes.md §8.3 rule 3); see CommSet.
	SetComm = "peeragent-comm-"
)

// CommSet is the base name (for SetName) of the shared set of the
// normalised community value v ("a:b" or "a:b:c").
func CommSet(v string) string { return SetComm + v + "-" }

// CommValue is the community value of a set named SetName(CommSet(v), p);
// ok is false for any other set.
func CommValue(set string) (v string, ok bool) {
	rest, ok := strings.CutPrefix(set, SetComm)
	if !ok {
		return "", false
	}
	v, ok = strings.CutSuffix(rest, "-v4")
	if !ok {
		v, ok = strings.CutSuffix(rest, "-v6")
	}
	if !ok || v == "" {
		return "", false
	}
	return v, true
}

// SetName is a shared set's name for the family of p.
func SetName(base string, p netip.Prefix) string {
	if p.Addr().Is4() {
		return base + "v4"
	}
	return base + "v6"
}

// SetMember is one prefix of a shared set, matched with lengths Min..Max.
type SetMember struct {
	Set    string       `json:"set"`
	Prefix netip.Prefix `json:"prefix"`
	Min    uint8        `json:"min"`
	Max    uint8        `json:"max"`
}

// SetKey is a member's key in Derived.Sets: set name, then PrefixKey.
func SetKey(set string, p netip.Prefix) string { return set + "|" + PrefixKey(p) }

// PrefixKey is a prefix's key in the path maps: AddrKey then the length,
// so that listings come out in prefix order and the prefixes inside a CIDR
// are one contiguous range from AddrKey of its first address.
func PrefixKey(p netip.Prefix) string {
	var buf [1 + 2*16 + 4]byte
	b := appendAddrKey(buf[:0], p.Addr())
	bits := p.Bits()
	if bits < 0 || bits > 999 {
		return fmt.Sprintf("%s/%03d", AddrKey(p.Addr()), bits) // not a valid prefix
	}
	b = append(b, '/', byte('0'+bits/100), byte('0'+bits/10%10), byte('0'+bits%10))
	return string(b)
}

// ExportVerdict is the verdict of a neighbor's own export rules (BGPFilter
// export rules, docs/routes.md §8.3 rule 2) on a local path of prefix p.
// "" when no rule decides; rules for learned routes (source RemotePeers)
// never match a local path.
func ExportVerdict(rules []Rule, p netip.Prefix) string {
	for _, r := range rules {
		if r.FromRemotePeers {
			continue
		}
		if ruleMatches(r, p) {
			return r.Action
		}
	}
	return ""
}

// ruleMatches mirrors the GoBGP mapping of Calico's operators: Equal is the
// exact prefix, In any prefix inside the CIDR with a length within the
// bounds (by default the CIDR's length to the full length); NotEqual and
// NotIn are their inversions.
func ruleMatches(r Rule, p netip.Prefix) bool {
	if !r.Prefix.IsValid() {
		return true
	}
	if r.Prefix.Addr().Is4() != p.Addr().Is4() {
		return false
	}
	var in bool
	switch r.Operator {
	case "Equal", "NotEqual":
		in = r.Prefix.Masked() == p
	default:
		lo, hi := r.Prefix.Bits(), p.Addr().BitLen()
		if r.MinLen != 0 {
			lo = int(r.MinLen)
		}
		if r.MaxLen != 0 {
			hi = int(r.MaxLen)
		}
		in = p.Bits() >= r.Prefix.Bits() && r.Prefix.Contains(p.Addr()) && p.Bits() >= lo && p.Bits() <= hi
	}
	if r.Operator == "NotEqual" || r.Operator == "NotIn" {
		return !in
	}
	return in
}

// Receivers lists the neighbors an own path goes to (docs/routes.md §8.3
// rule 11, `to`): every active neighbor of its family whose own export
// rules do not reject it.
func Receivers(p *Path, neighbors []*Neighbor) []netip.Addr {
	to := []netip.Addr{}
	fam := p.Family()
	for _, n := range neighbors {
		if n.Active() && slices.Contains(n.Families, fam) && ExportVerdict(n.Policy.Export, p.Prefix) != "reject" {
			to = append(to, n.Address)
		}
	}
	return to
}
