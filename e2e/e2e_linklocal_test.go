//go:build linux

package e2e

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/internal/testrig/frr"
	"github.com/peeragent/peeragent/internal/testrig/netns"
	"github.com/peeragent/peeragent/state"
)

// The link-local rig: FRR (zebra and bgpd) in one namespace of the test's
// own, the agent (--dataplane linux) in another, joined by a veth pair: a
// shared link, on which FRR sends its IPv6 routes with two next hops, its
// global address and its link-local one.
const (
	llFRRAddr   = "fd00:37::1/64"
	llAgentAddr = "fd00:37::2/64"
	llPrefix    = "fd00:99::/64"
	llBehind    = "fd00:99::1" // on FRR's lo: an address behind the route
	llFRRAS     = 65037
)

var llNodes = nodeYAML("node-a", `projectcalico.org/IPv6Address: fd00:37::2/64`)

const llBGP = `apiVersion: crd.projectcalico.org/v1
kind: BGPConfiguration
metadata: {name: default}
spec: {nodeToNodeMeshEnabled: false, listenPort: 179}
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: frr}
spec: {node: node-a, peerIP: fd00:37::1, asNumber: 65037}
`

// TestFRRLinkLocalNextHopOnSharedLink is docs/routes.md appendix A
// scenario 37 on a real shared link: FRR with zebra knows the veth and
// its link-local address, so it sends fd00:99::/64 to the agent with the
// global next hop then the link-local one (FRR's neighbor shows
// sharedNetwork; the agent's best-path action carries both, which the
// test requires). The agent installs the route via the global next hop
// only (§9.1 rule 2, §9.2 rule 2), protocol 201, metric 1024; an ICMPv6
// echo to an address behind it is answered; the agent stays healthy and
// its session the one first established.
func TestFRRLinkLocalNextHopOnSharedLink(t *testing.T) {
	frr.Require(t)
	netns.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	fe, ae := netns.Pair(t, netip.MustParsePrefix(llFRRAddr), netip.MustParsePrefix(llAgentAddr))
	frrAddr, agentAddr := fe.Addr.Addr(), ae.Addr.Addr()
	ipCmd(t, ctx, "-n", fe.NS, "addr", "add", llBehind+"/128", "dev", "lo")
	echo := newEcho6(t, ae.NS, agentAddr)
	if err := echo.echo(llBehind, 1, time.Second); err == nil {
		t.Fatalf("echo %s -> %s answered before the agent runs", agentAddr, llBehind)
	} else {
		t.Logf("before the agent: echo %s -> %s: %v", agentAddr, llBehind, err)
	}

	// What FRR really sends, read off the agent's end of the link.
	wire := netns.CaptureTCP(t, ae.NS, ae.Dev, frrAddr)
	peer := frr.Start(t, frr.Config{RouterID: netip.MustParseAddr("10.37.0.1"), Address: frrAddr, Port: 179, AS: llFRRAS,
		Namespace: fe.NS, Zebra: true, Announce: []netip.Prefix{netip.MustParsePrefix(llPrefix)},
		Neighbors: []frr.Neighbor{{Name: "agent", Address: agentAddr, Port: 179, AS: 64512}}})

	dir := t.TempDir()
	writeFile(t, dir, "nodes.yaml", llNodes)
	writeFile(t, dir, "bgp.yaml", llBGP)
	a := startNSAgent(t, buildAgent(t), ae.NS, dir, "node-a", agentAddr.String())

	// The agent's route, via the global next hop only, in the kernel.
	a.waitLearned(t, ctx, frrAddr, llPrefix)
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	first, err := peer.WaitNeighbor(wctx, agentAddr, func(n frr.NeighborState) bool {
		return n.Established() && n.AddressFamilies["ipv6Unicast"].SentPrefixes == 1
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("FRR's neighbor %s: %s, next hops sent: global %s, local %s", first.Address, first.Connection, first.NexthopGlobal, first.NexthopLocal)
	if first.Connection != "sharedNetwork" || first.NexthopGlobal != frrAddr.String() || first.NexthopLocal != fe.LinkLocal.String() {
		t.Errorf("FRR's neighbor %s: %s, next hops %s and %s; want sharedNetwork, %s and %s (FRR's link-local on %s)",
			agentAddr, first.Connection, first.NexthopGlobal, first.NexthopLocal, frrAddr, fe.LinkLocal, fe.Dev)
	}

	// On the wire: every UPDATE of the prefix carries both next hops,
	// global first (RFC 2545); one with the global one only fails.
	want := []netip.Addr{frrAddr, fe.LinkLocal}
	var sent [][]netip.Addr
	streams, err := wire.WaitStreams(10*time.Second, func(ss [][]byte) bool {
		sent = nil
		for _, b := range ss {
			nh, _ := wireNextHops(b, netip.MustParsePrefix(llPrefix))
			sent = append(sent, nh...)
		}
		return len(sent) > 0
	})
	if err != nil {
		t.Fatalf("no UPDATE of %s from %s on the wire (%d connections captured): %v", llPrefix, frrAddr, len(streams), err)
	}
	for _, nh := range sent {
		if !slices.Equal(nh, want) {
			t.Errorf("FRR sent %s with next hops %v, want %v (global, then its link-local on %s)", llPrefix, nh, want, fe.Dev)
		}
	}
	t.Logf("on the wire: %d UPDATE(s) of %s from %s, MP_REACH next hops %v", len(sent), llPrefix, frrAddr, sent)

	// What the agent's speaker reported: the global next hop first (GoBGP
	// v4.8.0 keeps only that one of a received MP_REACH_NLRI).
	learned := a.learnedNextHops(t, ctx, llPrefix, frrAddr)
	t.Logf("the agent's best path of %s from %s: next hops %v", llPrefix, frrAddr, learned)
	if !slices.Equal(learned, want) && !slices.Equal(learned, want[:1]) {
		t.Errorf("the agent's best path of %s: next hops %v, want %v or its first", llPrefix, learned, want)
	}

	out, err := exec.CommandContext(ctx, "ip", "-n", ae.NS, "-6", "route", "show", "table", "main").CombinedOutput()
	if err != nil {
		t.Fatalf("ip -n %s -6 route: %v\n%s", ae.NS, err, out)
	}
	t.Logf("ip -n %s -6 route show table main:\n%s", ae.NS, out)
	checkKernel6(t, ae.NS, llPrefix, frrAddr.String(), ae.Dev)

	for seq := uint16(2); ; seq++ {
		err := echo.echo(llBehind, seq, time.Second)
		if err == nil {
			t.Logf("with the route: echo %s -> %s: reply", agentAddr, llBehind)
			break
		}
		if seq == 5 {
			t.Fatalf("echo %s -> %s through the installed route: %v", agentAddr, llBehind, err)
		}
	}

	// Alive: the session is the first one after two more keepalives from
	// the agent (hold 9 s: one every 3 s), and the agent reports healthy.
	kctx, kcancel := context.WithTimeout(ctx, 30*time.Second)
	defer kcancel()
	later, err := peer.WaitNeighbor(kctx, agentAddr, func(n frr.NeighborState) bool {
		return n.Messages.KeepalivesRecv >= first.Messages.KeepalivesRecv+2
	})
	if err != nil {
		t.Fatalf("no two more keepalives from the agent: %v", err)
	}
	if !later.SameSessionAs(first) {
		t.Errorf("FRR's session with the agent was reset: %v, then %v", first, later)
	}
	if err := a.healthy(ctx); err != nil {
		t.Errorf("the agent after the route: %v", err)
	}
	d := a.state(t, ctx)
	for _, s := range d.Sessions {
		if s.Address == frrAddr && s.Phase != "established" {
			t.Errorf("the agent's session with %s: %s", frrAddr, s.Phase)
		}
	}
	t.Logf("scenario 37: FRR session %v; agent healthy", later)
}

// waitLearned waits until the agent's session with peer is established
// and its learned route to prefix is applied via the peer's address only.
func (a *nsAgent) waitLearned(t *testing.T, ctx context.Context, peer netip.Addr, prefix string) {
	t.Helper()
	waitState(t, ctx, 60*time.Second, a.fetch, fmt.Sprintf("%s: established session with %s and route %s via it", a.node, peer, prefix),
		func(d stateDump) bool {
			s, r := d.session(peer.String()), d.route(prefix)
			if r == nil || r.Origin != "learned" || r.Phase != state.RoutePhaseApplied {
				return false
			}
			if !slices.Equal(r.Via, []netip.Addr{peer}) {
				t.Fatalf("%s: route %s via %v, want via %s only", a.node, prefix, r.Via, peer)
			}
			return s != nil && s.Phase == state.PhaseEstablished
		})
}

// learnedNextHops reads the agent's /actions journal: the next hops of the
// last best path of prefix from neighbor that the speaker reported.
func (a *nsAgent) learnedNextHops(t *testing.T, ctx context.Context, prefix string, neighbor netip.Addr) []netip.Addr {
	t.Helper()
	var entries []struct {
		Action map[string]json.RawMessage `json:"action"`
	}
	if err := agent.Fetch(ctx, a.client, pingHTTP, "/actions", &entries); err != nil {
		t.Fatalf("%s: %v", a.node, err)
	}
	var nh []netip.Addr
	found := false
	for _, e := range entries {
		raw, ok := e.Action[state.BestPathsChanged{}.ActionName()]
		if !ok {
			continue
		}
		var b state.BestPathsChanged
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Fatalf("%s /actions: %v: %s", a.node, err, raw)
		}
		for _, p := range b.Prefixes {
			if p.Prefix.String() != prefix {
				continue
			}
			for _, path := range p.Paths {
				if path.Neighbor == neighbor && !path.Withdrawn {
					nh, found = path.NextHops, true
				}
			}
		}
	}
	if !found {
		t.Fatalf("%s: no best path of %s from %s in /actions (%d entries)", a.node, prefix, neighbor, len(entries))
	}
	return nh
}

// healthy is nil when /healthz answers 200.
func (a *nsAgent) healthy(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pingHTTP+"/healthz", nil)
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New("/healthz: " + resp.Status)
	}
	return nil
}

// checkKernel6 reads `ip -j -6 route show table main` in ns: of protocol
// 201, only learned via nextHop on dev, metric 1024.
func checkKernel6(t *testing.T, ns, learned, nextHop, dev string) {
	t.Helper()
	rs, _ := kernelRoutes(t, ns, "-6")
	var ours []string
	ok := false
	for _, r := range rs {
		ours = append(ours, fmt.Sprintf("%+v", r))
		ok = ok || r.Dst == learned && r.Gateway == nextHop && r.Dev == dev && r.Metric == pingPrio
	}
	if !ok || len(ours) != 1 {
		t.Errorf("%s: routes of protocol 201: %s; want only %s via %s dev %s metric %d", ns, strings.Join(ours, ", "), learned, nextHop, dev, pingPrio)
	}
}

// echo6 sends ICMPv6 echoes from a source address inside a namespace
// through a raw socket opened there (the kernel fills in the checksum).
type echo6 struct {
	conn *net.IPConn
	id   uint16
}

func newEcho6(t *testing.T, ns string, src netip.Addr) *echo6 {
	t.Helper()
	var c *net.IPConn
	err := netns.Do(ns, func() error {
		var err error
		c, err = net.ListenIP("ip6:ipv6-icmp", &net.IPAddr{IP: src.AsSlice()})
		return err
	})
	if err != nil {
		t.Fatalf("raw ICMPv6 socket in %s: %v", ns, err)
	}
	t.Cleanup(func() { c.Close() })
	return &echo6{conn: c, id: uint16(time.Now().UnixNano())}
}

// echo sends one echo request (seq) and waits up to wait for its reply;
// nil when it came, else why not.
func (e *echo6) echo(dst string, seq uint16, wait time.Duration) error {
	msg := make([]byte, 16)
	msg[0] = 128 // echo request
	binary.BigEndian.PutUint16(msg[4:], e.id)
	binary.BigEndian.PutUint16(msg[6:], seq)
	if _, err := e.conn.WriteTo(msg, &net.IPAddr{IP: net.ParseIP(dst)}); err != nil {
		return err
	}
	if err := e.conn.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return err
	}
	buf := make([]byte, 1500)
	for {
		n, _, err := e.conn.ReadFrom(buf)
		if err != nil {
			return fmt.Errorf("no reply within %v: %w", wait, err)
		}
		// 129: echo reply; anything else (neighbour discovery...) is not ours.
		if n >= 8 && buf[0] == 129 && binary.BigEndian.Uint16(buf[4:]) == e.id && binary.BigEndian.Uint16(buf[6:]) == seq {
			return nil
		}
	}
}
