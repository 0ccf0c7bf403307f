package frr

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Config is one bgpd instance: a single local address and port, which it
// listens on and connects from, and the neighbors it peers with: IPv4
// (127.0.0.0/8 gives as many addresses as a test wants), or IPv6 (::1) with
// an IPv4 RouterID, whose neighbors are activated for IPv6 unicast.
type Config struct {
	// RouterID is the BGP router ID. Zero means Address.
	RouterID netip.Addr
	// Address is the local address: the listening address (bgpd -l) and
	// the source of every outgoing connection (update-source).
	Address netip.Addr
	// Port is the local listening port (bgpd -p). Use FreePort. Outgoing
	// connections come from an ephemeral port.
	Port int
	// AS is bgpd's own AS number.
	AS uint32
	// Neighbors are the BGP sessions, keyed by their address.
	Neighbors []Neighbor
	// Announce are prefixes bgpd originates ("network" statements, no
	// import check) to every neighbor: IPv4 ones in IPv4 unicast, IPv6
	// ones in IPv6 unicast (Reconfigure changes IPv4 ones only).
	Announce []netip.Prefix
	// Raw are config lines written after "router bgp", for example a
	// route-map that a neighbor's AFExtra names. Reconfigure cannot
	// change them.
	Raw []string
	// Namespace is the network namespace (its ip netns name) bgpd, and
	// zebra with it, run in, through `ip netns exec`; Address must be one
	// of its addresses. Empty: the test's own. The test creates and
	// removes it (see internal/testrig/netns).
	Namespace string
	// Zebra runs FRR's zebra beside bgpd, which then talks to it instead
	// of running with -Z: bgpd knows the namespace's interfaces and
	// addresses, so a neighbor on a connected subnet is directly
	// connected. eBGP neighbors get no ebgp-multihop (single hop, as on a
	// real shared link), and an IPv6 neighbor on a shared link gets
	// FRR's link-local next hop after the global one. zebra programs the
	// kernel of the namespace it runs in (bgpd's best routes), so Zebra
	// needs a Namespace.
	Zebra bool
}

// Neighbor is one BGP session of a bgpd instance.
type Neighbor struct {
	// Name is the neighbor's description (shown as Description in
	// NeighborState); FRR keys neighbors by address, not by name.
	Name string
	// Address and Port are where the peer listens (and connects from).
	Address netip.Addr
	Port    int
	// AS is the peer's AS number; equal to Config.AS makes it iBGP.
	AS uint32
	// Password turns on TCP-MD5 with this key: 1 to 80 printable ASCII
	// characters, no spaces. Plain text: test-only.
	Password string
	// Passive makes bgpd wait for the peer to connect.
	Passive bool
	// Extra are raw neighbor settings, each rendered as
	// "neighbor ADDRESS " + Extra[i] (for example "timers 1 3" or
	// "shutdown").
	Extra []string
	// AFExtra are raw settings inside the neighbor's address family (IPv4
	// or IPv6 unicast, by its address), each rendered as
	// "neighbor ADDRESS " + AFExtra[i] (for example "route-map NH out").
	// Reconfigure cannot change them.
	AFExtra []string
}

// maxPassword is the kernel's TCP_MD5SIG_MAXKEYLEN.
const maxPassword = 80

// clone is a deep copy: FRR keeps the config it runs apart from the
// caller's, whose slices the caller may change before Reconfigure.
func (c Config) clone() Config {
	c.Neighbors = slices.Clone(c.Neighbors)
	for i := range c.Neighbors {
		c.Neighbors[i].Extra = slices.Clone(c.Neighbors[i].Extra)
		c.Neighbors[i].AFExtra = slices.Clone(c.Neighbors[i].AFExtra)
	}
	c.Announce = slices.Clone(c.Announce)
	c.Raw = slices.Clone(c.Raw)
	return c
}

// routerID is the effective router ID: RouterID, else Address.
func (c Config) routerID() netip.Addr { return cmp.Or(c.RouterID, c.Address) }

// Validate reports the first problem that would stop bgpd from running the
// config, in words closer to the Config than FRR's parser errors.
func (c Config) Validate() error {
	if !c.routerID().Is4() {
		return fmt.Errorf("frrtest: router ID %v is not IPv4", c.routerID())
	}
	if !c.Address.IsValid() || c.Port <= 0 || c.Port > 65535 || c.AS == 0 {
		return fmt.Errorf("frrtest: local address %v, port %d, AS %d: all three are required", c.Address, c.Port, c.AS)
	}
	seen := map[netip.Addr]bool{}
	for _, n := range c.Neighbors {
		if err := n.validate(); err != nil {
			return err
		}
		if seen[n.Address] {
			return fmt.Errorf("frrtest: two neighbors with address %v", n.Address)
		}
		seen[n.Address] = true
	}
	for _, p := range c.Announce {
		if !p.IsValid() {
			return fmt.Errorf("frrtest: announced prefix %v is not valid", p)
		}
	}
	for _, l := range c.Raw {
		if strings.ContainsAny(l, "\r\n") {
			return fmt.Errorf("frrtest: raw line %q spans lines", l)
		}
	}
	if c.Namespace != "" && (strings.ContainsAny(c.Namespace, "/") || strings.IndexFunc(c.Namespace, notGraphic) >= 0 ||
		c.Namespace == "." || c.Namespace == "..") {
		return fmt.Errorf("frrtest: namespace %q is not an ip netns name", c.Namespace)
	}
	if c.Zebra && c.Namespace == "" {
		return fmt.Errorf("frrtest: zebra programs the kernel it runs with: Zebra needs a Namespace of the test's own")
	}
	return nil
}

func (n Neighbor) validate() error {
	if !n.Address.IsValid() || n.Port <= 0 || n.Port > 65535 || n.AS == 0 {
		return fmt.Errorf("frrtest: neighbor address %v, port %d, AS %d: all three are required",
			n.Address, n.Port, n.AS)
	}
	if len(n.Password) > maxPassword || strings.IndexFunc(n.Password, notGraphic) >= 0 {
		return fmt.Errorf("frrtest: neighbor %v: an MD5 password is at most %d printable ASCII characters without spaces",
			n.Address, maxPassword)
	}
	for _, s := range append(append([]string{n.Name}, n.Extra...), n.AFExtra...) {
		if strings.ContainsAny(s, "\r\n") {
			return fmt.Errorf("frrtest: neighbor %v: name or extra setting %q spans lines", n.Address, s)
		}
	}
	return nil
}

func notGraphic(r rune) bool { return r <= ' ' || r > '~' }

// setting is one "neighbor ADDRESS KEY [VALUE]" line. Keys are unique per
// neighbor, so Reconfigure can tell a changed value from a removed setting.
type setting struct {
	key, value string
}

// settings are the neighbor's lines in the order FRR needs (remote-as
// creates the neighbor).
func (c Config) settings(n Neighbor) []setting {
	s := []setting{{"remote-as", fmt.Sprint(n.AS)}}
	if n.Name != "" {
		s = append(s, setting{"description", n.Name})
	}
	s = append(s, setting{"port", fmt.Sprint(n.Port)},
		setting{"update-source", c.Address.String()},
		// FRR retries a failed connection after 120 s by default.
		setting{"timers connect", "1"})
	if n.AS != c.AS && !c.Zebra {
		// Without zebra bgpd knows no interface, so no eBGP neighbor is
		// directly connected: single-hop eBGP would never connect.
		s = append(s, setting{"ebgp-multihop", "255"})
	}
	if n.Password != "" {
		s = append(s, setting{"password", n.Password})
	}
	if n.Passive {
		s = append(s, setting{"passive", ""})
	}
	for _, e := range n.Extra {
		s = append(s, setting{strings.TrimSpace(e), ""})
	}
	return s
}

func (s setting) line(addr netip.Addr) string {
	if s.value == "" {
		return fmt.Sprintf("neighbor %s %s", addr, s.key)
	}
	return fmt.Sprintf("neighbor %s %s %s", addr, s.key, s.value)
}

// globals are the "router bgp" statements before the neighbors.
func (c Config) globals() []string {
	return []string{
		"bgp router-id " + c.routerID().String(),
		"bgp log-neighbor-changes",
		"no bgp ebgp-requires-policy",
		// Peers on 127.0.0.0/8 send 127.x next hops; without this FRR
		// answers each such UPDATE with a NOTIFICATION (Invalid NEXT_HOP)
		// and the session flaps.
		"bgp allow-martian-nexthop",
		// Announced prefixes need no route in a RIB (there is no zebra).
		"no bgp network import-check",
		"timers bgp 3 9",
	}
}

// hostname is sent to peers in the hostname capability.
func (c Config) hostname() string {
	return "frrtest-" + strings.NewReplacer(".", "-", ":", "-").Replace(c.Address.String())
}

// Render is the bgpd.conf text for c. It is deterministic (same Config,
// same bytes).
func (c Config) Render() string {
	var b strings.Builder
	b.WriteString("! written by peeragent internal/testrig/frr\n")
	fmt.Fprintf(&b, "hostname %s\n", c.hostname())
	b.WriteString("log stdout debugging\n")
	b.WriteString("debug bgp neighbor-events\n")
	fmt.Fprintf(&b, "router bgp %d\n", c.AS)
	for _, g := range c.globals() {
		fmt.Fprintf(&b, " %s\n", g)
	}
	for _, n := range c.Neighbors {
		for _, s := range c.settings(n) {
			fmt.Fprintf(&b, " %s\n", s.line(n.Address))
		}
	}
	for _, v6 := range []bool{false, true} {
		var lines []string
		for _, n := range c.Neighbors {
			if n.Address.Is6() != v6 {
				continue
			}
			if v6 {
				lines = append(lines, fmt.Sprintf("neighbor %s activate", n.Address))
			}
			for _, e := range n.AFExtra {
				lines = append(lines, fmt.Sprintf("neighbor %s %s", n.Address, strings.TrimSpace(e)))
			}
		}
		for _, p := range c.Announce {
			if p.Addr().Is6() == v6 {
				lines = append(lines, "network "+p.Masked().String())
			}
		}
		if len(lines) == 0 {
			continue
		}
		if v6 {
			b.WriteString(" address-family ipv6 unicast\n")
		} else {
			b.WriteString(" address-family ipv4 unicast\n")
		}
		for _, l := range lines {
			fmt.Fprintf(&b, "  %s\n", l)
		}
		b.WriteString(" exit-address-family\n")
	}
	b.WriteString("exit\n")
	for _, l := range c.Raw {
		fmt.Fprintf(&b, "%s\n", l)
	}
	return b.String()
}

// RenderZebra is the zebra.conf text for c (used when c.Zebra): zebra's
// log at the informational level, to standard output. Deterministic.
func (c Config) RenderZebra() string {
	var b strings.Builder
	b.WriteString("! written by peeragent internal/testrig/frr\n")
	fmt.Fprintf(&b, "hostname %s-zebra\n", c.hostname())
	b.WriteString("log stdout informational\n")
	return b.String()
}
