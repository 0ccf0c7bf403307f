package bird

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// sinceLayout is how "timeformat protocol iso long us" prints Since.
const sinceLayout = "2006-01-02 15:04:05.999999"

// ProtocolState is one protocol of `birdc show protocols all`, as BIRD
// sees it.
type ProtocolState struct {
	Name  string // the protocol name, e.g. "peer_127_0_0_2"
	Proto string // "BGP", "Device", "Static"
	Table string // "---" for BGP
	// State is BIRD's protocol state: "up", "start", "stop" or "down". A
	// BGP protocol is "up" exactly while its session is Established.
	State string
	// Since is when State last changed (local time, printed to the
	// microsecond). A session that went down and came back (reset, Cease,
	// hold timer expiry, restart by reconfiguration) has a later Since.
	// BIRD keeps this time on its monotonic clock and converts it to wall
	// time at each query, so the printed value jitters by tens of
	// microseconds between two queries of the same session: compare with
	// SameSessionAs, not ==.
	Since time.Time
	// SinceText is the Since column as printed.
	SinceText string
	// Info is the Info column, e.g. "Established" or
	// "Active        Socket: Connection refused".
	Info string
	// BGPState is the "BGP state:" line: "Idle", "Connect", "Active",
	// "Passive", "OpenSent", "OpenConfirm", "Established", "Close",
	// "Down"; empty for other protocols.
	BGPState string
	// LastError is the "Last error:" line, e.g. "Received: Cease" or
	// "Socket: Connection refused"; empty when BIRD shows none.
	LastError string
	// Details are the protocol's other "Key: value" lines, keyed as BIRD
	// prints them ("Neighbor AS", "Neighbor ID", "Source address",
	// "Hold timer", "Session"...). Capability lists are left out: they are
	// LocalCaps and NeighborCaps.
	Details map[string]string
	// LocalCaps are the capabilities BIRD sent in its OPEN ("Local
	// capabilities") and NeighborCaps those the peer sent ("Neighbor
	// capabilities"), shown while the session is up: each by name
	// ("Graceful restart", "4-octet AS numbers"...) with its "Key: value"
	// lines ("Restart time": "8", "AF supported": "ipv4"; empty for a
	// capability without any). Both are nil when BIRD shows no list.
	LocalCaps, NeighborCaps map[string]map[string]string
	// Channels are the protocol's channels by name ("ipv4", "ipv6").
	Channels map[string]ChannelState
}

// ChannelState is one "Channel" block of a protocol.
type ChannelState struct {
	Name  string // "ipv4", "ipv6"
	State string // "UP", "DOWN"...
	// Routes counts, from "Routes: N imported, [N filtered,] N exported,
	// N preferred".
	Imported, Filtered, Exported, Preferred int
	// The "Route change stats" rows; BIRD's "---" cells are 0.
	ImportUpdates, ImportWithdraws RouteStats
	ExportUpdates, ExportWithdraws RouteStats
	// Details are the channel's other "Key: value" lines ("Table",
	// "Input filter", "BGP Next hop"...).
	Details map[string]string
}

// RouteStats is one row of BIRD's "Route change stats" table.
type RouteStats struct {
	Received, Rejected, Filtered, Ignored, Accepted int
}

// Established reports whether the BGP session is up.
func (p ProtocolState) Established() bool {
	return p.State == "up" && p.BGPState == "Established"
}

// SinceJitter is how far two readings of one unchanged Since may differ.
// Measured idle: under 0.1 ms; a busy machine can delay BIRD's clock
// reading by a scheduler slice. A reset that came back within it would go
// unseen, but none does in practice: BIRD delays its own reconnect by
// about 1 s (0.87 s measured after the peer restarted the session), and
// GoBGP waits 1-2 s before connecting. Bird.Establishments is the exact count.
const SinceJitter = 100 * time.Millisecond

// SameSessionAs reports whether p is still the session seen as earlier:
// Established in both, and Since unchanged within SinceJitter.
func (p ProtocolState) SameSessionAs(earlier ProtocolState) bool {
	if !p.Established() || !earlier.Established() {
		return false
	}
	if p.Since.IsZero() || earlier.Since.IsZero() {
		return p.SinceText != "" && p.SinceText == earlier.SinceText
	}
	d := p.Since.Sub(earlier.Since)
	return d < SinceJitter && d > -SinceJitter
}

// String is a one-line summary for test failure messages.
func (p ProtocolState) String() string {
	s := fmt.Sprintf("%s %s %s since %s", p.Name, p.State, p.BGPState, p.SinceText)
	if p.LastError != "" {
		s += " (last error: " + p.LastError + ")"
	}
	return s
}

// ParseProtocols reads the output of `birdc show protocols all` (with or
// without birdc's "BIRD x ready." banner).
func ParseProtocols(out string) (map[string]ProtocolState, error) {
	ps := &parser{out: map[string]ProtocolState{}}
	for i, line := range strings.Split(stripBanner(out), "\n") {
		if err := ps.line(line); err != nil {
			return nil, fmt.Errorf("birdtest: show protocols line %d %q: %w", i+1, line, err)
		}
	}
	ps.flushProtocol()
	return ps.out, nil
}

type parser struct {
	out map[string]ProtocolState
	p   *ProtocolState
	ch  *ChannelState
	// caps is the capability list being read (LocalCaps or NeighborCaps
	// of p), capName its capability being read.
	caps    map[string]map[string]string
	capName string
}

func (ps *parser) line(line string) error {
	trimmed := strings.TrimSpace(line)
	switch {
	case trimmed == "":
		return nil
	case isHeader(line):
		return nil
	case line[0] != ' ' && line[0] != '\t':
		ps.flushProtocol()
		p, err := parseSummary(line)
		ps.p = &p
		return err
	case ps.p == nil:
		return fmt.Errorf("detail line before any protocol")
	case strings.HasPrefix(trimmed, "Channel "):
		ps.flushChannel()
		ps.caps, ps.capName = nil, ""
		name := strings.TrimSpace(strings.TrimPrefix(trimmed, "Channel "))
		ps.ch = &ChannelState{Name: name, Details: map[string]string{}}
		return nil
	case ps.ch != nil:
		return ps.ch.detail(trimmed)
	default:
		ps.detail(line, trimmed)
		return nil
	}
}

// detail reads a protocol-level line: a capability list's heading (four
// spaces in), its capabilities (six) and their lines (eight), or another
// "Key: value" line, which ends a capability list.
func (ps *parser) detail(line, trimmed string) {
	switch n := indent(line); {
	case n == 4 && trimmed == "Local capabilities":
		ps.p.LocalCaps = map[string]map[string]string{}
		ps.caps, ps.capName = ps.p.LocalCaps, ""
	case n == 4 && trimmed == "Neighbor capabilities":
		ps.p.NeighborCaps = map[string]map[string]string{}
		ps.caps, ps.capName = ps.p.NeighborCaps, ""
	case n > 4 && ps.caps != nil:
		ps.capLine(n, trimmed)
	default:
		ps.caps, ps.capName = nil, ""
		ps.p.detail(line, trimmed)
	}
}

func (ps *parser) capLine(indent int, trimmed string) {
	if indent == 6 || ps.capName == "" {
		ps.capName = trimmed
		ps.caps[trimmed] = map[string]string{}
		return
	}
	if key, value, ok := cutKey(trimmed); ok {
		ps.caps[ps.capName][key] = value
	}
}

func isHeader(line string) bool {
	f := strings.Fields(line)
	return len(f) >= 5 && f[0] == "Name" && f[1] == "Proto" && f[2] == "Table" && f[3] == "State"
}

func (ps *parser) flushChannel() {
	if ps.ch != nil {
		ps.p.Channels[ps.ch.Name] = *ps.ch
		ps.ch = nil
	}
}

func (ps *parser) flushProtocol() {
	ps.caps, ps.capName = nil, ""
	if ps.p != nil {
		ps.flushChannel()
		ps.out[ps.p.Name] = *ps.p
		ps.p = nil
	}
}

// parseSummary reads "NAME PROTO TABLE STATE SINCE INFO...", where SINCE
// is two fields in iso long format and one in BIRD's default format.
func parseSummary(line string) (ProtocolState, error) {
	f := strings.Fields(line)
	p := ProtocolState{Details: map[string]string{}, Channels: map[string]ChannelState{}}
	if len(f) < 5 {
		return p, fmt.Errorf("want at least 5 columns")
	}
	p.Name, p.Proto, p.Table, p.State = f[0], f[1], f[2], f[3]
	if len(f) >= 6 {
		if t, err := time.ParseInLocation(sinceLayout, f[4]+" "+f[5], time.Local); err == nil {
			p.Since, p.SinceText, p.Info = t, f[4]+" "+f[5], afterFields(line, 6)
			return p, nil
		}
	}
	p.SinceText, p.Info = f[4], afterFields(line, 5)
	return p, nil
}

// afterFields is line after its first n whitespace-separated fields.
func afterFields(line string, n int) string {
	s := line
	for range n {
		s = strings.TrimLeft(s, " \t")
		j := strings.IndexAny(s, " \t")
		if j < 0 {
			return ""
		}
		s = s[j:]
	}
	return strings.TrimSpace(s)
}

// detail reads a protocol-level line. Lines indented deeper than four
// spaces are capability lists, which are skipped.
func (p *ProtocolState) detail(line, trimmed string) {
	key, value, ok := cutKey(trimmed)
	switch {
	case !ok:
	case key == "BGP state":
		p.BGPState = value
	case key == "Last error":
		p.LastError = value
	case indent(line) > 4:
	default:
		if _, dup := p.Details[key]; !dup {
			p.Details[key] = value
		}
	}
}

func (c *ChannelState) detail(trimmed string) error {
	key, value, ok := cutKey(trimmed)
	if !ok {
		return nil
	}
	var err error
	switch key {
	case "State":
		c.State = value
	case "Routes":
		err = c.parseRoutes(value)
	case "Import updates":
		c.ImportUpdates, err = parseStats(value)
	case "Import withdraws":
		c.ImportWithdraws, err = parseStats(value)
	case "Export updates":
		c.ExportUpdates, err = parseStats(value)
	case "Export withdraws":
		c.ExportWithdraws, err = parseStats(value)
	case "Route change stats":
	default:
		c.Details[key] = value
	}
	return err
}

// parseRoutes reads "1 imported, 0 filtered, 0 exported, 1 preferred".
func (c *ChannelState) parseRoutes(value string) error {
	for _, part := range strings.Split(value, ",") {
		f := strings.Fields(part)
		if len(f) != 2 {
			return fmt.Errorf("routes count %q", part)
		}
		n, err := strconv.Atoi(f[0])
		if err != nil {
			return err
		}
		switch f[1] {
		case "imported":
			c.Imported = n
		case "filtered":
			c.Filtered = n
		case "exported":
			c.Exported = n
		case "preferred":
			c.Preferred = n
		}
	}
	return nil
}

// parseStats reads "received rejected filtered ignored accepted" cells.
func parseStats(value string) (RouteStats, error) {
	f := strings.Fields(value)
	if len(f) != 5 {
		return RouteStats{}, fmt.Errorf("want 5 route stats, got %q", value)
	}
	var n [5]int
	for i, cell := range f {
		if cell == "---" {
			continue
		}
		v, err := strconv.Atoi(cell)
		if err != nil {
			return RouteStats{}, err
		}
		n[i] = v
	}
	return RouteStats{Received: n[0], Rejected: n[1], Filtered: n[2], Ignored: n[3], Accepted: n[4]}, nil
}

func cutKey(trimmed string) (key, value string, ok bool) {
	key, value, ok = strings.Cut(trimmed, ":")
	return strings.TrimSpace(key), strings.TrimSpace(value), ok
}

func indent(line string) int {
	return len(line) - len(strings.TrimLeft(line, " \t"))
}
