package reducer

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/peeragent/peeragent/state"
)

// What no peer may install and no input may claim (docs/routes.md §9.2
// rule 8, §11.1, §11.2).

// specialRanges are the special-purpose ranges whose addresses are never
// forwarded (RFC 6890 sections 2.2.2 and 2.2.3, "Forwardable: False"), and
// multicast (RFC 5771, RFC 4291 §2.7), which a unicast route must not
// take. 255.255.255.255/32 (limited broadcast) is inside 240.0.0.0/4.
var specialRanges = []struct {
	p    netip.Prefix
	what string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this network"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::ffff:0:0/96"), "IPv4-mapped"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// specialInside is the special range p lies inside (p itself or a more
// specific prefix), or "". A default route is inside none.
func specialInside(p netip.Prefix) string {
	if !mayBeSpecial(p.Addr()) {
		return "" // the usual case, without the table
	}
	for _, r := range specialRanges {
		if p.Addr().Is4() == r.p.Addr().Is4() && p.Bits() >= r.p.Bits() && r.p.Contains(p.Addr()) {
			return fmt.Sprintf("%s (%s)", r.p, r.what)
		}
	}
	return ""
}

// mayBeSpecial: a's first byte is one of the special ranges' (0, 127,
// 169 and 224-255 for IPv4; 0x00, 0xfe and 0xff for IPv6).
func mayBeSpecial(a netip.Addr) bool {
	if a.Is4() {
		b := a.As4()[0]
		return b == 0 || b == 127 || b == 169 || b >= 224
	}
	b := a.As16()[0]
	return b == 0 || b >= 0xfe
}

// specialOverlap is the special range c overlaps (inside it, equal to it,
// or covering any of it: 0.0.0.0/0 covers them all), or "".
func specialOverlap(c netip.Prefix) string {
	for _, r := range specialRanges {
		if c.Addr().Is4() == r.p.Addr().Is4() && c.Overlaps(r.p) {
			return fmt.Sprintf("%s (%s)", r.p, r.what)
		}
	}
	return ""
}

// badNextHop says why nh cannot be a next hop towards a route learned on
// a node whose subnet of nh's family is sub, or "": a special-purpose or
// multicast address, or the subnet's network or broadcast address (on a
// subnet that has them: IPv4 shorter than /31, IPv6 shorter than /127).
func badNextHop(nh netip.Addr, sub netip.Prefix) string {
	onSubnet := sub.IsValid() && sub.Contains(nh)
	if !onSubnet { // N's own subnet may be special: a lab on 127.0.0.0/8
		if why := specialInside(netip.PrefixFrom(nh, nh.BitLen())); why != "" {
			return why
		}
	}
	if !onSubnet || sub.Bits() >= nh.BitLen()-1 {
		return ""
	}
	if nh == sub.Addr() {
		return "network address of " + sub.String()
	}
	if nh.Is4() && nh == lastAddr(sub) {
		return "broadcast address of " + sub.String()
	}
	return ""
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// coversTooClosely: p covers x more specifically than the connected subnet
// sub (when x is on it), or is x's host route (docs/routes.md §9.2 rule
// 8): a route that would take x's traffic away from the link.
func coversTooClosely(p netip.Prefix, x netip.Addr, sub netip.Prefix) bool {
	if !x.IsValid() || x.Is4() != p.Addr().Is4() || !p.Contains(x) {
		return false
	}
	return p.Bits() == x.BitLen() || (sub.IsValid() && sub.Contains(x) && p.Bits() > sub.Bits())
}

// refusedPrefix is why the learned prefix p is refused whatever its next
// hops (docs/routes.md §9.2 rule 8), with the detail /state shows; sub is
// N's subnet of p's family.
func (t *tx) refusedPrefix(p netip.Prefix, l *state.NodeEntry, sub netip.Prefix) (state.Refusal, string) {
	inSubnet := sub.IsValid() && p.Bits() >= sub.Bits() && sub.Contains(p.Addr())
	if why := specialInside(p); why != "" && !inSubnet {
		return state.RefusedMartianPrefix, "refused: inside " + why
	}
	if a := l.Addr(p.Addr().Is6()); coversTooClosely(p, a, sub) {
		return state.RefusedNodeAddress, fmt.Sprintf("refused: covers this node's address %s", a)
	}
	if x := t.neighborCovered(p, sub); x.IsValid() {
		return state.RefusedNeighborAddress, fmt.Sprintf("refused: covers the neighbor %s", x)
	}
	return state.RefusedNone, ""
}

// neighborCovered is a configured neighbor's address that p covers too
// closely, if any: only a host route or a prefix inside the subnet can.
func (t *tx) neighborCovered(p netip.Prefix, sub netip.Prefix) netip.Addr {
	if p.Bits() == p.Addr().BitLen() {
		if n, ok := t.s.Out.Neighbors.Get(state.AddrKey(p.Addr())); ok {
			return n.Address
		}
		return netip.Addr{}
	}
	if !sub.IsValid() || p.Bits() <= sub.Bits() || !sub.Contains(p.Addr()) {
		return netip.Addr{}
	}
	var found netip.Addr
	t.s.Out.Neighbors.RangeFrom(state.AddrKey(p.Masked().Addr()), func(_ string, n *state.Neighbor) bool {
		if !p.Contains(n.Address) {
			return false
		}
		found = n.Address
		return false
	})
	return found
}

// markNeighborCovers marks the learned prefixes that may cover a's
// address too closely: its host route and, when a is on the node's
// subnet, every prefix between the subnet and the host route.
func (t *tx) markNeighborCovers(a netip.Addr) {
	l := t.local()
	if l == nil {
		return
	}
	from := a.BitLen()
	if sub := nodeSubnet(l, a.Is6()); sub.IsValid() && sub.Contains(a) {
		from = sub.Bits() + 1
	}
	for bits := from; bits <= a.BitLen(); bits++ {
		p := netip.PrefixFrom(a, bits).Masked()
		k := state.PrefixKey(p)
		if _, ok := t.s.Inputs.Learned.Get(k); ok {
			t.markRouteKey(p, k)
		}
	}
}

// countRefused keeps the step's change of the refusal counts.
func (t *tx) countRefused(old, cur state.Refusal) {
	if old == cur {
		return
	}
	if t.refused == nil {
		t.refused = map[state.Refusal]int{}
	}
	if old != state.RefusedNone {
		t.refused[old]--
	}
	if cur != state.RefusedNone {
		t.refused[cur]++
	}
}

// refusedDone applies the step's changes of the refusal counts: one
// problem per cause with its count (docs/routes.md §9.2 rule 8).
func (t *tx) refusedDone() {
	if len(t.refused) == 0 {
		return
	}
	counts := state.RefusedCounts{}
	for c, n := range t.s.Routing.Refused {
		counts[c] = n
	}
	for c, d := range t.refused {
		if d == 0 {
			continue
		}
		counts[c] += d
		if counts[c] <= 0 {
			delete(counts, c)
		}
		t.setProblems(refusedBucket(c), refusedProblems(c, counts[c]))
	}
	t.refused = nil
	if len(counts) == 0 {
		counts = nil
	}
	t.s.Routing.Refused = counts
}

func refusedProblems(c state.Refusal, n int) []state.Problem {
	if n <= 0 {
		return nil
	}
	routes := "routes"
	if n == 1 {
		routes = "route"
	}
	return []state.Problem{{Object: "learned/" + c.String(), Reason: fmt.Sprintf("%d learned %s refused: %s", n, routes, c.Text())}}
}

func refusedBucket(c state.Refusal) string { return "refused/" + c.String() }

// joinHops is next hops in one line.
func joinHops(hops []string) string { return strings.Join(hops, " ") }

// coveredAddr is the address of this node l that the block c covers, if
// any (docs/routes.md §11.1).
func coveredAddr(c netip.Prefix, l *state.NodeEntry) netip.Addr {
	if l == nil {
		return netip.Addr{}
	}
	for _, a := range l.Addrs() {
		if c.Contains(a) {
			return a
		}
	}
	return netip.Addr{}
}
