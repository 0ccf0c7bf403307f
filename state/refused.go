package state

import "fmt"

// Refusal is why a learned route is refused (docs/routes.md §9.2 rule 8):
// the cause of a "not installed" that is the peer's doing, counted per
// cause (Routing.Refused) and reported as one problem per cause, never
// one per route.
//
// It is one byte (a TableRoute keeps it beside Drop, in what was padding,
// so the table costs nothing more per route) and reads and writes as its
// name.
type Refusal uint8

// The refusal causes, one per rule of docs/routes.md §9.2 rule 8;
// RefusedNone: not refused.
const (
	RefusedNone Refusal = iota
	RefusedMartianPrefix
	RefusedNodeAddress
	RefusedNeighborAddress
	RefusedNextHop
)

var refusalNames = [...]string{
	RefusedNone: "", RefusedMartianPrefix: "martian-prefix", RefusedNodeAddress: "node-address",
	RefusedNeighborAddress: "neighbor-address", RefusedNextHop: "next-hop",
}

// String is the cause's name ("martian-prefix"), "" for RefusedNone.
func (r Refusal) String() string {
	if int(r) < len(refusalNames) {
		return refusalNames[r]
	}
	return fmt.Sprintf("refusal(%d)", uint8(r))
}

// MarshalText writes the name.
func (r Refusal) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a name.
func (r *Refusal) UnmarshalText(b []byte) error {
	for i, n := range refusalNames {
		if n == string(b) {
			*r = Refusal(i)
			return nil
		}
	}
	return fmt.Errorf("unknown refusal %q", b)
}

// Refusals lists every cause, in the order of their rules.
var Refusals = []Refusal{RefusedMartianPrefix, RefusedNodeAddress, RefusedNeighborAddress, RefusedNextHop}

// Text is what a problem says of the cause.
func (r Refusal) Text() string {
	switch r {
	case RefusedMartianPrefix:
		return "the prefix is inside a special-purpose range that is never forwarded (RFC 6890: this network, loopback, link-local, reserved, limited broadcast, unspecified, IPv4-mapped) or multicast"
	case RefusedNodeAddress:
		return "the prefix covers this node's own address more specifically than its subnet"
	case RefusedNeighborAddress:
		return "the prefix covers a configured neighbor's address more specifically than the connected subnet (or is its host route)"
	case RefusedNextHop:
		return "no usable next hop (unspecified, link-local, loopback, multicast, reserved, broadcast, the subnet's network or broadcast address, of the other family or unparsable)"
	}
	return ""
}

// RefusedCounts is Routing.Refused: how many learned prefixes each cause
// keeps out of the table. A map value is never changed in place.
type RefusedCounts map[Refusal]int
