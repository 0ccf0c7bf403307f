package state

// Refusal is why a learned route is refused (docs/routes.md §9.2 rule 8):
// the cause of a "not installed" that is the peer's doing, counted per
// cause (Routing.Refused) and reported as one problem per cause, never
// one per route.
type Refusal string

// The refusal causes, one per rule of docs/routes.md §9.2 rule 8.
const (
	RefusedMartianPrefix   Refusal = "martian-prefix"
	RefusedNodeAddress     Refusal = "node-address"
	RefusedNeighborAddress Refusal = "neighbor-address"
	RefusedNextHop         Refusal = "next-hop"
)

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
