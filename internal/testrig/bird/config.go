package bird

import (
	"cmp"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
)

// Config is one BIRD instance: a single local address and port that every
// session binds to (strict bind), and the neighbors it peers with.
type Config struct {
	// RouterID is BIRD's router ID (IPv4). Zero means Address when that is
	// IPv4.
	RouterID netip.Addr
	// Address is the local address: the listening address and the source of
	// every outgoing connection. 127.0.0.0/8 works on Linux without setup.
	Address netip.Addr
	// Port is the local BGP port, listening and outgoing. Use FreePort.
	Port int
	// AS is BIRD's own AS number.
	AS uint32
	// Neighbors are the BGP sessions, one BIRD protocol each.
	Neighbors []Neighbor
	// Announce are prefixes BIRD originates (static blackhole routes) and
	// exports to every neighbor of the same address family.
	Announce []netip.Prefix
	// Netns, when set, runs BIRD inside this named network namespace
	// (`ip netns exec NETNS bird ...`), which the test creates and removes;
	// Address must be one of its addresses. The control socket stays in
	// the test's file system, so birdc runs from outside. Not part of
	// bird.conf: Reconfigure cannot change it.
	Netns string
}

// Neighbor is one BGP session of a BIRD instance.
type Neighbor struct {
	// Name is the BIRD protocol name (letters, digits, '_', not starting
	// with a digit). Empty means the default of ProtocolName.
	Name string
	// Address and Port are where the peer listens and connects from.
	Address netip.Addr
	Port    int
	// AS is the peer's AS number; equal to Config.AS makes it iBGP.
	AS uint32
	// Password turns on TCP-MD5 with this key. Plain text: test-only.
	Password string
	// Passive makes BIRD wait for the peer to connect.
	Passive bool
	// GracefulRestart is BIRD's `graceful restart` mode (RFC 4724): "on"
	// (advertise the capability with the restart time and the session's
	// families, and keep the peer's routes as stale when its session
	// breaks), "aware" (the capability without families: the peer keeps
	// none of BIRD's routes) or "off" (no capability). Empty leaves BIRD's
	// default, aware.
	GracefulRestart string
	// GracefulRestartTime is the restart time BIRD advertises, in seconds
	// (`graceful restart time`; 1 to 4095, the capability's 12 bits): how
	// long a peer keeps BIRD's routes after the session breaks. Zero
	// leaves BIRD's default, 120 s.
	GracefulRestartTime int
	// Extra are raw BIRD statements added inside the protocol block, without
	// the trailing ';' (for example "hold time 9" or "ttl security yes").
	Extra []string
}

// grModes are the values of Neighbor.GracefulRestart.
var grModes = []string{"", "on", "off", "aware"}

var protocolNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ProtocolName is the BIRD protocol name of the session: Name, or
// "peer_" followed by the address with '.' and ':' replaced by '_'
// (127.0.0.2 gives peer_127_0_0_2).
func (n Neighbor) ProtocolName() string {
	if n.Name != "" {
		return n.Name
	}
	r := strings.NewReplacer(".", "_", ":", "_")
	return "peer_" + r.Replace(n.Address.String())
}

// clone is a deep copy: Bird keeps the config it runs apart from the
// caller's, whose slices the caller may change after Start or Reconfigure.
func (c Config) clone() Config {
	c.Neighbors = slices.Clone(c.Neighbors)
	for i := range c.Neighbors {
		c.Neighbors[i].Extra = slices.Clone(c.Neighbors[i].Extra)
	}
	c.Announce = slices.Clone(c.Announce)
	return c
}

// routerID is the effective router ID: RouterID, else Address.
func (c Config) routerID() netip.Addr { return cmp.Or(c.RouterID, c.Address) }

// Validate reports the first problem that would stop BIRD from running the
// config, in words closer to the Config than BIRD's parser errors.
func (c Config) Validate() error {
	if id := c.routerID(); !id.Is4() {
		return fmt.Errorf("birdtest: router ID %v is not IPv4 (set Config.RouterID)", id)
	}
	if !c.Address.IsValid() || c.Port <= 0 || c.Port > 65535 || c.AS == 0 {
		return fmt.Errorf("birdtest: local address %v, port %d, AS %d: all three are required", c.Address, c.Port, c.AS)
	}
	if strings.ContainsAny(c.Netns, "/ \t\n") || c.Netns == "." || c.Netns == ".." {
		return fmt.Errorf("birdtest: %q is not a network namespace name", c.Netns)
	}
	seen := map[string]bool{}
	for _, n := range c.Neighbors {
		if err := n.validate(); err != nil {
			return err
		}
		if n.Address.Is4() != c.Address.Is4() {
			return fmt.Errorf("birdtest: neighbor %s: %v and local %v are of different families", n.ProtocolName(), n.Address, c.Address)
		}
		if seen[n.ProtocolName()] {
			return fmt.Errorf("birdtest: two neighbors named %q (set Neighbor.Name)", n.ProtocolName())
		}
		seen[n.ProtocolName()] = true
	}
	return nil
}

func (n Neighbor) validate() error {
	if !protocolNameRE.MatchString(n.ProtocolName()) {
		return fmt.Errorf("birdtest: neighbor name %q is not a BIRD symbol", n.ProtocolName())
	}
	if !n.Address.IsValid() || n.Port <= 0 || n.Port > 65535 || n.AS == 0 {
		return fmt.Errorf("birdtest: neighbor %s: address %v, port %d, AS %d: all three are required",
			n.ProtocolName(), n.Address, n.Port, n.AS)
	}
	if !slices.Contains(grModes, n.GracefulRestart) {
		return fmt.Errorf("birdtest: neighbor %s: graceful restart %q is not on, off or aware", n.ProtocolName(), n.GracefulRestart)
	}
	if n.GracefulRestartTime < 0 || n.GracefulRestartTime > 4095 {
		return fmt.Errorf("birdtest: neighbor %s: graceful restart time %d is not within 0..4095", n.ProtocolName(), n.GracefulRestartTime)
	}
	if strings.ContainsAny(n.Password, "\"\n") {
		return fmt.Errorf("birdtest: neighbor %s: a BIRD password cannot contain '\"' or a newline", n.ProtocolName())
	}
	return nil
}

// Render is the bird.conf text for c. It is deterministic (same Config, same
// bytes), so Reconfigure with an unchanged Config restarts nothing.
func (c Config) Render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# written by peeragent internal/testrig/bird\n")
	fmt.Fprintf(&b, "router id %s;\n", c.routerID())
	// Absolute microsecond times in "show protocols": Since is comparable
	// across calls and across midnight.
	b.WriteString("timeformat protocol iso long us;\n")
	b.WriteString("log stderr all;\n")
	b.WriteString("debug protocols { states, events };\n")
	b.WriteString("protocol device { scan time 10; }\n")
	renderStatic(&b, "announce4", "ipv4", c.Announce, true)
	renderStatic(&b, "announce6", "ipv6", c.Announce, false)
	for _, n := range c.Neighbors {
		renderNeighbor(&b, c, n)
	}
	return b.String()
}

func renderStatic(b *strings.Builder, name, family string, ps []netip.Prefix, want4 bool) {
	var routes []string
	for _, p := range ps {
		if p.Addr().Is4() == want4 {
			routes = append(routes, fmt.Sprintf("  route %s blackhole;\n", p.Masked()))
		}
	}
	if len(routes) == 0 {
		return
	}
	fmt.Fprintf(b, "protocol static %s {\n  %s;\n%s}\n", name, family, strings.Join(routes, ""))
}

func renderNeighbor(b *strings.Builder, c Config, n Neighbor) {
	fmt.Fprintf(b, "protocol bgp %s {\n", n.ProtocolName())
	fmt.Fprintf(b, "  local %s port %d as %d;\n", c.Address, c.Port, c.AS)
	fmt.Fprintf(b, "  neighbor %s port %d as %d;\n", n.Address, n.Port, n.AS)
	b.WriteString("  strict bind yes;\n")
	// On loopback no neighbor is "directly connected", so eBGP without
	// multihop fails with "Invalid next hop".
	b.WriteString("  multihop;\n")
	// BIRD's defaults (connect retry 120 s, error wait 60-300 s) are for
	// production; a test wants a failed attempt retried within seconds.
	b.WriteString("  connect delay time 1;\n  connect retry time 2;\n  error wait time 1, 5;\n")
	if n.Password != "" {
		fmt.Fprintf(b, "  password %s;\n", quote(n.Password))
	}
	if n.Passive {
		b.WriteString("  passive yes;\n")
	}
	if n.GracefulRestart != "" {
		fmt.Fprintf(b, "  graceful restart %s;\n", n.GracefulRestart)
	}
	if n.GracefulRestartTime > 0 {
		fmt.Fprintf(b, "  graceful restart time %d;\n", n.GracefulRestartTime)
	}
	for _, e := range n.Extra {
		fmt.Fprintf(b, "  %s;\n", strings.TrimSuffix(strings.TrimSpace(e), ";"))
	}
	family := "ipv6"
	if n.Address.Is4() {
		family = "ipv4"
	}
	fmt.Fprintf(b, "  %s { import all; export where source = RTS_STATIC; };\n}\n", family)
}

// quote is a BIRD string literal. BIRD's lexer has no escapes: a string
// ends at the next '"' and may not span lines (validate rejects both).
func quote(s string) string {
	return `"` + s + `"`
}
