//go:build linux

package e2e

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	testnetns "github.com/peeragent/peeragent/internal/testrig/netns"
	"github.com/peeragent/peeragent/state"
)

// The hostile edge (docs/routes.md §9.2 rule 8, §11.1-2): the agent
// (--dataplane linux) in namespace A, a hand-written BGP speaker of the
// test's own in namespace B, joined by a veth pair. The speaker takes the
// agent's IPv4 and IPv6 sessions and announces what no peer may install:
// martian prefixes, the node's own address, the host routes of configured
// neighbors (its own session's address via another next hop among them)
// and unusable next hops, beside two good prefixes and the default
// routes. The manifest directory holds, beside the agent's neighbors,
// BlockAffinities and an IPPool that no input may claim. The speaker is
// written from bytes up (gobgp's packet library only serialises), so it
// can send what a BGP daemon would refuse to originate.

const (
	hostAddrA  = "192.168.81.1" // node-a, the agent
	hostAddrB  = "192.168.81.2" // the hostile speaker
	hostAddrB6 = "fd00:81::2"
	hostAS     = 65001
)

var hostNodes = nodeYAML("node-a", `projectcalico.org/IPv4Address: 192.168.81.1/24, projectcalico.org/IPv6Address: "fd00:81::1/64"`)

var hostPeers = fmt.Sprintf(`apiVersion: crd.projectcalico.org/v1
kind: BGPConfiguration
metadata: {name: default}
spec: {nodeToNodeMeshEnabled: false, listenPort: 179}
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: hostile}
spec: {node: node-a, peerIP: %s, asNumber: %d}
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: hostile6}
spec: {node: node-a, peerIP: "%s", asNumber: %d}
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: absent}
spec: {node: node-a, peerIP: 192.168.81.3, asNumber: 65003}
`, hostAddrB, hostAS, hostAddrB6, hostAS)

// hostIPAM: one good pool and block, and the claims of docs/routes.md
// §11.1-2 (0.0.0.0/0, ::/0, 127.0.0.0/8, 224.0.0.0/4, a block covering
// the node's address; a pool 0.0.0.0/0).
var hostIPAM = func() string {
	s := defaultPoolYAML + "---\napiVersion: crd.projectcalico.org/v1\nkind: IPPool\nmetadata: {name: everything}\nspec: {cidr: 0.0.0.0/0}\n"
	for _, b := range [][2]string{{"good", "10.244.1.0/26"}, {"all4", "0.0.0.0/0"}, {"all6", "::/0"},
		{"loopback", "127.0.0.0/8"}, {"multicast", "224.0.0.0/4"}, {"node-subnet", "192.168.81.0/26"}} {
		s += affinityYAML(b[0], b[1])
	}
	return s
}()

// hostileRoute is one announcement: prefix via next hop.
type hostileRoute struct{ prefix, nextHop string }

// The announcements over IPv4 (NEXT_HOP) and IPv6 (MP_REACH_NLRI). IPv4
// next hops GoBGP itself refuses (loopback, 0/8, class D and E: its
// ValidateAttribute, treat-as-withdraw) are left out: they never reach
// the agent's table.
var (
	hostileV4 = []hostileRoute{
		{"0.0.0.0/0", hostAddrB}, {"198.51.100.0/24", hostAddrB}, // installed
		{"0.0.0.0/8", hostAddrB}, {"127.0.0.0/8", hostAddrB}, {"127.0.0.1/32", hostAddrB},
		{"169.254.0.0/16", hostAddrB}, {"169.254.169.254/32", hostAddrB}, {"224.0.0.0/4", hostAddrB},
		{"240.0.0.0/4", hostAddrB}, {"255.255.255.255/32", hostAddrB}, // martian-prefix: 8
		{"192.168.81.1/32", hostAddrB}, {"192.168.81.0/25", hostAddrB}, // node-address: 2
		{"192.168.81.2/32", "192.168.81.3"}, {"192.168.81.3/32", hostAddrB}, // neighbor-address: 2
		{"198.51.101.0/24", "192.168.81.0"}, {"198.51.102.0/24", "192.168.81.255"}, // next-hop: 2
	}
	hostileV6 = []hostileRoute{
		{"::/0", hostAddrB6}, {"2001:db8:81::/48", hostAddrB6}, // installed
		{"fe80::1/128", hostAddrB6}, {"ff00::/8", hostAddrB6}, {"::1/128", hostAddrB6}, // martian-prefix: 3
		{"fd00:81::1/128", hostAddrB6},                                                               // node-address: 1
		{"fd00:81::2/128", "fd00:81::3"},                                                             // neighbor-address: 1
		{"2001:db8:1::/48", "ff02::1"}, {"2001:db8:2::/48", "::1"}, {"2001:db8:3::/48", "fd00:81::"}, // next-hop: 3
	}
	hostileRefused = state.RefusedCounts{
		state.RefusedMartianPrefix: 11, state.RefusedNodeAddress: 3,
		state.RefusedNeighborAddress: 3, state.RefusedNextHop: 5,
	}
	// hostileKernel: every route of the agent's protocol the kernel may hold.
	hostileKernel = []string{
		"0.0.0.0/0 via 192.168.81.2", "10.244.1.0/26 blackhole", "198.51.100.0/24 via 192.168.81.2",
		"2001:db8:81::/48 via fd00:81::2", "::/0 via fd00:81::2",
	}
)

// TestHostileEdgeRefused: the speaker's martians never reach the kernel,
// one problem per cause carries the count, the sessions stay up (no
// NOTIFICATION, no flap, still Established after the speaker's last
// announcement and a few keepalives), and of the manifest's claims only
// the good block is advertised and blackholed, each bad object a problem.
func TestHostileEdgeRefused(t *testing.T) {
	requireNetns(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	nsA, nsB := vethPair(t, ctx, "hs", "ha0", "hb0")
	for _, s := range []struct{ ns, dev, v4, v6 string }{{nsA, "ha0", hostAddrA, "fd00:81::1"}, {nsB, "hb0", hostAddrB, hostAddrB6}} {
		ipCmd(t, ctx, "-n", s.ns, "addr", "add", s.v4+"/24", "dev", s.dev)
		ipCmd(t, ctx, "-n", s.ns, "addr", "add", s.v6+"/64", "dev", s.dev, "nodad")
		ipCmd(t, ctx, "-n", s.ns, "link", "set", s.dev, "up")
	}
	sp := startHostile(t, nsB)
	dir := t.TempDir()
	writeFile(t, dir, "nodes.yaml", hostNodes)
	writeFile(t, dir, "peers.yaml", hostPeers)
	writeFile(t, dir, "ipam.yaml", hostIPAM)
	h := nsHandle(t, nsA)
	agent := startNSAgent(t, buildAgent(t), nsA, dir, "node-a", hostAddrA)

	// Wait for both markers in the kernel and every refusal counted.
	var d stateDump
	for {
		var err error
		d, err = agent.fetch(ctx)
		if err == nil && sp.sentAll() && sameCounts(d.Routing.Refused, hostileRefused) &&
			slices.Equal(hostileKernelRoutes(t, h), hostileKernel) {
			break
		}
		select {
		case <-ctx.Done():
			js, _ := json.Marshal(d)
			t.Fatalf("not every announcement refused or installed (speaker sent all: %v, kernel %q, last error %v): %s\n%s",
				sp.sentAll(), hostileKernelRoutes(t, h), err, js, agent.logs())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Logf("refused %v; kernel (protocol %d): %q", d.Routing.Refused, pingProto, hostileKernel)
	// Keep going for a few of the speaker's keepalives: nothing changes.
	time.Sleep(4 * time.Second)
	d, err := agent.fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := hostileKernelRoutes(t, h); !slices.Equal(got, hostileKernel) {
		t.Errorf("kernel routes of protocol %d: %q, want %q", pingProto, got, hostileKernel)
	}
	for _, addr := range []string{hostAddrB, hostAddrB6} {
		s := d.session(addr)
		if s == nil || s.BGP != "established" || s.Flaps != 0 {
			t.Errorf("session with %s: %+v, want established with no flap", addr, s)
		}
	}
	if n := sp.notifications(); len(n) > 0 {
		t.Errorf("the speaker received NOTIFICATIONs: %v", n)
	}
	if c := sp.closed(); len(c) > 0 {
		t.Errorf("sessions ended: %v", c)
	}
	wantProblems := map[string]string{}
	for _, c := range state.Refusals {
		wantProblems["learned/"+c.String()] = fmt.Sprintf("%d learned routes refused: ", hostileRefused[c])
	}
	for _, name := range []string{"all4", "all6", "loopback", "multicast", "node-subnet"} {
		wantProblems["blockaffinity/"+name] = "cidr "
	}
	wantProblems["ippool/everything"] = "cidr 0.0.0.0/0 overlaps 0.0.0.0/8 (this network); the pool is ignored"
	for obj, prefix := range wantProblems {
		found := false
		for _, p := range d.Problems {
			found = found || (p.Object == obj && strings.HasPrefix(p.Reason, prefix))
		}
		if !found {
			t.Errorf("no problem %s %q…: %v", obj, prefix, d.Problems)
		}
	}
	// Of the node's own blocks only the good one reached the peer.
	if got, want := sp.received(), []string{"10.244.1.0/26"}; !slices.Equal(got, want) {
		t.Errorf("the speaker received %q, want %q", got, want)
	}
}

func sameCounts(a, b state.RefusedCounts) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// hostileKernelRoutes lists the main table's routes of the agent's
// protocol in A, both families, as "PREFIX via GW" or "PREFIX blackhole",
// sorted.
func hostileKernelRoutes(t *testing.T, h *netlink.Handle) []string {
	t.Helper()
	rs, err := h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Protocol: pingProto}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		t.Fatalf("route list: %v", err)
	}
	var out []string
	for _, r := range rs {
		dst := "0.0.0.0/0"
		switch {
		case r.Dst != nil:
			dst = r.Dst.String()
		case r.Family == netlink.FAMILY_V6:
			dst = "::/0"
		}
		switch {
		case r.Type == unix.RTN_BLACKHOLE:
			out = append(out, dst+" blackhole")
		case r.Gw != nil:
			out = append(out, dst+" via "+r.Gw.String())
		default:
			out = append(out, dst+" ?")
		}
	}
	slices.Sort(out)
	return out
}

// hostileSpeaker is the hand-written BGP speaker: it accepts the agent's
// sessions on port 179 in its namespace, answers OPEN and KEEPALIVE,
// announces hostileV4 or hostileV6 (by the session's family) and then
// End-of-RIB, sends a keepalive every second, and records what it
// receives.
type hostileSpeaker struct {
	mu      sync.Mutex
	sent    map[string]bool // by family
	notes   []string
	ended   []string
	gotNLRI []string
}

func startHostile(t *testing.T, ns string) *hostileSpeaker {
	t.Helper()
	ln, err := testnetns.Listen(ns, "tcp", ":179")
	if err != nil {
		t.Fatal(err)
	}
	sp := &hostileSpeaker{sent: map[string]bool{}}
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(done)
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				go func() { <-done; c.Close() }()
				sp.serve(c, done)
			}()
		}
	}()
	return sp
}

func (sp *hostileSpeaker) serve(c net.Conn, done chan struct{}) {
	remote := c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
	v6 := remote.Is6()
	fam, routes, id := bgp.RF_IPv4_UC, hostileV4, netip.MustParseAddr(hostAddrB)
	if v6 {
		fam, routes = bgp.RF_IPv6_UC, hostileV6
	}
	caps := []bgp.ParameterCapabilityInterface{bgp.NewCapMultiProtocol(fam), bgp.NewCapFourOctetASNumber(hostAS)}
	open, err := bgp.NewBGPOpenMessage(hostAS, 9, id, []bgp.OptionParameterInterface{bgp.NewOptionParameterCapability(caps)})
	if err != nil {
		sp.end(remote, err)
		return
	}
	var wmu sync.Mutex
	send := func(m *bgp.BGPMessage) error {
		b, err := m.Serialize()
		if err != nil {
			return err
		}
		wmu.Lock()
		defer wmu.Unlock()
		_, err = c.Write(b)
		return err
	}
	if err := send(open); err != nil {
		sp.end(remote, err)
		return
	}
	established := make(chan struct{})
	go func() { // the announcements, then keepalives
		select {
		case <-established:
		case <-done:
			return
		}
		for _, r := range routes {
			if err := send(hostileUpdate(fam, r)); err != nil {
				return
			}
		}
		if err := send(bgp.NewEndOfRib(fam)); err != nil {
			return
		}
		sp.mu.Lock()
		sp.sent[fam.String()] = true
		sp.mu.Unlock()
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				if send(bgp.NewBGPKeepAliveMessage()) != nil {
					return
				}
			}
		}
	}()
	gotOpen := false
	for {
		m, err := readBGP(c)
		if err != nil {
			select {
			case <-done:
			default:
				sp.end(remote, err)
			}
			return
		}
		switch b := m.Body.(type) {
		case *bgp.BGPOpen:
			gotOpen = true
			if err := send(bgp.NewBGPKeepAliveMessage()); err != nil {
				sp.end(remote, err)
				return
			}
		case *bgp.BGPKeepAlive:
			if gotOpen {
				gotOpen = false
				close(established)
			}
		case *bgp.BGPNotification:
			sp.mu.Lock()
			sp.notes = append(sp.notes, fmt.Sprintf("%s: code %d subcode %d", remote, b.ErrorCode, b.ErrorSubcode))
			sp.mu.Unlock()
		case *bgp.BGPUpdate:
			sp.mu.Lock()
			for _, n := range b.NLRI {
				sp.gotNLRI = append(sp.gotNLRI, n.NLRI.String())
			}
			for _, a := range b.PathAttributes {
				if r, ok := a.(*bgp.PathAttributeMpReachNLRI); ok {
					for _, n := range r.Value {
						sp.gotNLRI = append(sp.gotNLRI, n.NLRI.String())
					}
				}
			}
			sp.mu.Unlock()
		}
	}
}

// hostileUpdate announces one route: IPv4 with NEXT_HOP, IPv6 with
// MP_REACH_NLRI.
func hostileUpdate(fam bgp.Family, r hostileRoute) *bgp.BGPMessage {
	p := netip.MustParsePrefix(r.prefix)
	nh := netip.MustParseAddr(r.nextHop)
	nlri, _ := bgp.NewIPAddrPrefix(p)
	attrs := []bgp.PathAttributeInterface{
		bgp.NewPathAttributeOrigin(0),
		bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{bgp.NewAs4PathParam(bgp.BGP_ASPATH_ATTR_TYPE_SEQ, []uint32{hostAS})}),
	}
	if fam == bgp.RF_IPv6_UC {
		reach, err := bgp.NewPathAttributeMpReachNLRI(fam, []bgp.PathNLRI{{NLRI: nlri}}, nh)
		if err != nil {
			panic(err)
		}
		return bgp.NewBGPUpdateMessage(nil, append(attrs, reach), nil)
	}
	nexthop, err := bgp.NewPathAttributeNextHop(nh)
	if err != nil {
		panic(err)
	}
	return bgp.NewBGPUpdateMessage(nil, append(attrs, nexthop), []bgp.PathNLRI{{NLRI: nlri}})
}

// readBGP reads one BGP message.
func readBGP(c net.Conn) (*bgp.BGPMessage, error) {
	hdr := make([]byte, 19)
	if _, err := io.ReadFull(c, hdr); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(hdr[16:]))
	if n < 19 || n > 65535 {
		return nil, fmt.Errorf("BGP message length %d", n)
	}
	msg := make([]byte, n)
	copy(msg, hdr)
	if _, err := io.ReadFull(c, msg[19:]); err != nil {
		return nil, err
	}
	return bgp.ParseBGPMessage(msg)
}

func (sp *hostileSpeaker) end(remote netip.Addr, err error) {
	if errors.Is(err, net.ErrClosed) {
		return
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.ended = append(sp.ended, fmt.Sprintf("%s: %v", remote, err))
}

func (sp *hostileSpeaker) sentAll() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.sent[bgp.RF_IPv4_UC.String()] && sp.sent[bgp.RF_IPv6_UC.String()]
}

func (sp *hostileSpeaker) notifications() []string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return slices.Clone(sp.notes)
}

func (sp *hostileSpeaker) closed() []string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return slices.Clone(sp.ended)
}

func (sp *hostileSpeaker) received() []string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	out := slices.Clone(sp.gotNLRI)
	slices.Sort(out)
	return slices.Compact(out)
}
