package gobgp

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// Two embedded speakers on 127.0.0.1 (AS 64512) and 127.0.0.2 (AS 64513),
// each driven by its own Executor, with the lower address passive as in
// Calico's mesh.
const (
	establishTimeout = 15 * time.Second // GoBGP waits 1-2 s before dialling, 5 s after a drop
	quietWindow      = 3 * time.Second  // how long a session must stay untouched
)

type pair struct {
	a, b   *speaker
	na, nb *state.Neighbor // a's view of b, b's view of a
}

func newPair(t *testing.T) *pair {
	t.Helper()
	requireLoopback(t, "127.0.0.2")
	p := &pair{a: newSpeaker(t, "127.0.0.1"), b: newSpeaker(t, "127.0.0.2")}
	p.na, p.nb = neighborOf(p.a, p.b, 64512, 64513), neighborOf(p.b, p.a, 64513, 64512)
	p.na.Passive = true
	return p
}

func (p *pair) start(t *testing.T, effsA ...effects.Effect) {
	t.Helper()
	mustApply(t, p.a.Executor, append([]effects.Effect{effects.StartServer{Server: p.a.server(64512)}}, effsA...)...)
	mustApply(t, p.b.Executor, effects.StartServer{Server: p.b.server(64513)}, effects.AddPeer{Neighbor: p.nb, Gen: 1})
	p.waitEstablished(t)
}

func (p *pair) waitEstablished(t *testing.T) {
	t.Helper()
	p.a.events.waitState(t, p.b.addr, "established", establishTimeout)
	p.b.events.waitState(t, p.a.addr, "established", establishTimeout)
}

// quiet fails the test if either side reports any state change for the
// pair's session within the window after marks ma, mb.
func (p *pair) quiet(t *testing.T, what string, ma, mb int) {
	t.Helper()
	if p.a.events.waitUntil(quietWindow, func() bool { return len(p.a.events.since(ma, p.b.addr)) > 0 }) {
		t.Errorf("%s touched the session on %s: %s", what, p.a.addr, p.a.events.describe(p.b.addr))
	}
	if evs := p.b.events.since(mb, p.a.addr); len(evs) > 0 {
		t.Errorf("%s touched the session on %s: %s", what, p.b.addr, p.b.events.describe(p.a.addr))
	}
}

// originate adds locally originated routes to a speaker's RIB.
func originate(t *testing.T, sp *speaker, prefixes ...string) {
	t.Helper()
	for _, s := range prefixes {
		pfx := netip.MustParsePrefix(s)
		nlri, err := bgp.NewIPAddrPrefix(pfx)
		if err != nil {
			t.Fatalf("nlri %s: %v", s, err)
		}
		nh, err := bgp.NewPathAttributeNextHop(netip.IPv4Unspecified())
		if err != nil {
			t.Fatal(err)
		}
		path := &apiutil.Path{Family: bgp.RF_IPv4_UC, Nlri: nlri,
			Attrs: []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), nh}}
		if _, err := sp.Speaker().AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{path}}); err != nil {
			t.Fatalf("add path %s: %v", s, err)
		}
	}
}

func rib(t *testing.T, sp *speaker) []string {
	t.Helper()
	var out []string
	err := sp.Speaker().ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_GLOBAL, Family: bgp.RF_IPv4_UC},
		func(prefix bgp.NLRI, _ []*apiutil.Path) { out = append(out, prefix.String()) })
	if err != nil {
		t.Fatalf("ListPath: %v", err)
	}
	slices.Sort(out)
	return out
}

func waitRIB(t *testing.T, sp *speaker, want ...string) {
	t.Helper()
	slices.Sort(want)
	if !pollUntil(establishTimeout, func() bool { return slices.Equal(rib(t, sp), want) }) {
		t.Fatalf("RIB of %s: want %v, have %v; its adj-in: %v", sp.addr, want, rib(t, sp), tables(sp, api.TableType_TABLE_TYPE_ADJ_IN))
	}
}

// tables lists a speaker's per-neighbor table (adj-in or adj-out) of
// every neighbor, for failure messages.
func tables(sp *speaker, typ api.TableType) map[string][]string {
	out := map[string][]string{}
	bgpSrv := sp.Speaker()
	if bgpSrv == nil {
		return out
	}
	ns, _ := sp.Neighbors(context.Background())
	for _, n := range ns {
		var ps []string
		_ = bgpSrv.ListPath(apiutil.ListPathRequest{TableType: typ, Name: n.Address.String(), Family: bgp.RF_IPv4_UC, EnableFiltered: true},
			func(prefix bgp.NLRI, _ []*apiutil.Path) { ps = append(ps, prefix.String()) })
		slices.Sort(ps)
		out[n.Address.String()] = ps
	}
	return out
}

// TestPairSessionLifecycle: Established; each neighbor's own policy
// filters what it imports and exports; applying the same effects again
// and a policy removal leave the session alone;
// DeletePeer tears it down and both watches report it.
func TestPairSessionLifecycle(t *testing.T) {
	p := newPair(t)
	pol := state.Policy{
		Import: []state.Rule{{Filter: "f", Action: "reject", Operator: "In", Prefix: netip.MustParsePrefix("10.10.0.0/16")}},
		Export: []state.Rule{{Filter: "f", Action: "reject", Operator: "In", Prefix: netip.MustParsePrefix("172.16.0.0/12")}},
	}
	applyA := []effects.Effect{effects.SetPolicy{Addr: p.na.Address, Policy: pol, Gen: 1}, effects.AddPeer{Neighbor: p.na, Gen: 1}}
	p.start(t, applyA...)
	if got := p.a.events.describe(p.b.addr); !strings.HasSuffix(got, "active -> opensent -> openconfirm -> established") {
		t.Errorf("session actions on %s: %s", p.a.addr, got)
	}

	originate(t, p.b, "10.10.1.0/24", "10.20.0.0/16")
	originate(t, p.a, "192.168.7.0/24", "172.16.1.0/24")
	ribsOK := func() bool { // a's adj-in too: the route a's import policy rejects must have arrived
		return slices.Equal(rib(t, p.a), []string{"10.20.0.0/16", "172.16.1.0/24", "192.168.7.0/24"}) &&
			slices.Equal(rib(t, p.b), []string{"10.10.1.0/24", "10.20.0.0/16", "192.168.7.0/24"}) &&
			slices.Equal(tables(p.a, api.TableType_TABLE_TYPE_ADJ_IN)[p.b.addr], []string{"10.10.1.0/24", "10.20.0.0/16"})
	}
	// Under heavy load (four -race test runs at once on 2 cores) GoBGP
	// v4.8.0 has been seen to lose an UPDATE sent just after the session
	// came up: the sender's adj-out holds the route, the receiver's adj-in
	// never does (3 times in 20 runs; never when less loaded). A soft
	// reset out re-sends the adj-out; what this test checks, the policies,
	// holds either way, and the loss is logged for whoever looks upstream.
	if !pollUntil(5*time.Second, ribsOK) {
		t.Logf("GoBGP lost an UPDATE (RIB of %s %v, adj-in %v; adj-out of %s %v): soft reset out on both sides",
			p.a.addr, rib(t, p.a), tables(p.a, api.TableType_TABLE_TYPE_ADJ_IN), p.b.addr, tables(p.b, api.TableType_TABLE_TYPE_ADJ_OUT))
		for _, sp := range []*speaker{p.a, p.b} {
			for _, n := range []*state.Neighbor{p.na, p.nb} {
				_ = sp.Speaker().ResetPeer(context.Background(), &api.ResetPeerRequest{Address: n.Address.String(),
					Soft: true, Direction: api.ResetPeerRequest_DIRECTION_OUT})
			}
		}
	}
	if !pollUntil(establishTimeout, ribsOK) {
		t.Fatalf("after originating: RIB of %s %v, adj-in %v, adj-out %v; RIB of %s %v, adj-in %v, adj-out %v",
			p.a.addr, rib(t, p.a), tables(p.a, api.TableType_TABLE_TYPE_ADJ_IN), tables(p.a, api.TableType_TABLE_TYPE_ADJ_OUT),
			p.b.addr, rib(t, p.b), tables(p.b, api.TableType_TABLE_TYPE_ADJ_IN), tables(p.b, api.TableType_TABLE_TYPE_ADJ_OUT))
	}

	ma, mb := p.a.events.mark(), p.b.events.mark()
	mustApply(t, p.a.Executor, append(append([]effects.Effect{effects.StartServer{Server: p.a.server(64512)}}, applyA...),
		effects.UpdatePeer{Old: p.na, New: p.na, Gen: 2})...)
	mustApply(t, p.b.Executor, effects.StartServer{Server: p.b.server(64513)}, effects.AddPeer{Neighbor: p.nb, Gen: 1})
	p.quiet(t, "applying the same effects again", ma, mb)

	// On GoBGP v4 every neighbor setting resets the session
	// (docs/gobgp-updates.md); what changes in place is the policy.
	ma, mb = p.a.events.mark(), p.b.events.mark()
	mustApply(t, p.a.Executor, effects.DeletePolicy{Addr: p.na.Address, Gen: 3})
	waitRIB(t, p.a, "10.10.1.0/24", "10.20.0.0/16", "172.16.1.0/24", "192.168.7.0/24")
	waitRIB(t, p.b, "10.10.1.0/24", "10.20.0.0/16", "172.16.1.0/24", "192.168.7.0/24")
	p.quiet(t, "a policy removal", ma, mb)

	ma, mb = p.a.events.mark(), p.b.events.mark()
	mustApply(t, p.a.Executor, effects.DeletePeer{Addr: p.na.Address, Gen: 4})
	p.a.events.waitState(t, p.b.addr, "idle", establishTimeout)
	if !p.b.events.waitUntil(establishTimeout, func() bool { return len(p.b.events.since(mb, p.a.addr)) > 0 }) {
		t.Fatalf("%s never saw the session go", p.b.addr)
	}
	if evs := p.a.events.since(ma, p.b.addr); evs[0].State != "idle" || evs[0].Reason == "" {
		t.Errorf("deletion on %s reported as %s", p.a.addr, p.a.events.describe(p.b.addr))
	}
	if evs := p.b.events.since(mb, p.a.addr); evs[0].State == "established" || evs[0].Reason == "" {
		t.Errorf("deletion seen from %s as %+v", p.b.addr, evs[0])
	}
	if _, ok, _ := p.a.currentPeer(context.Background(), p.na.Address); ok {
		t.Errorf("the peer is still configured")
	}
	t.Logf("session actions on %s: %s", p.a.addr, p.a.events.describe(p.b.addr))
	t.Logf("session actions on %s: %s", p.b.addr, p.b.events.describe(p.a.addr))
}

// TestPairPasswordRotation: an MD5 session reaches Established, the kernel
// refuses a connection without the key, and rotating the password on both
// sides brings the session back. No password reaches a log.
func TestPairPasswordRotation(t *testing.T) {
	const first, second = "md5-first-secret", "md5-second-secret"
	p := newPair(t)
	p.na.Password, p.nb.Password = state.NewPassword(first), state.NewPassword(first)
	p.start(t, effects.AddPeer{Neighbor: p.na, Gen: 1})

	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(p.b.addr)}, Timeout: 500 * time.Millisecond}
	if c, err := d.Dial("tcp4", net.JoinHostPort(p.a.addr, itoa(p.a.port))); err == nil {
		c.Close()
		t.Fatalf("a connection without the MD5 key was accepted: TCP MD5 is not in force")
	}

	ma := p.a.events.mark()
	na2, nb2 := *p.na, *p.nb
	na2.Password, nb2.Password = state.NewPassword(second), state.NewPassword(second)
	ca, ra := effects.Classify(p.na, &na2)
	cb, rb := effects.Classify(p.nb, &nb2)
	mustApply(t, p.a.Executor, effects.UpdatePeer{Old: p.na, New: &na2, Gen: 2, Changes: ca, Reset: ra})
	mustApply(t, p.b.Executor, effects.UpdatePeer{Old: p.nb, New: &nb2, Gen: 2, Changes: cb, Reset: rb})
	p.a.events.waitBounce(t, ma, p.b.addr, establishTimeout)
	p.waitEstablished(t)
	t.Logf("session actions on %s: %s", p.a.addr, p.a.events.describe(p.b.addr))
	t.Logf("session actions on %s: %s", p.b.addr, p.b.events.describe(p.a.addr))
	for _, sp := range []*speaker{p.a, p.b} {
		if logs := sp.logs.String(); strings.Contains(logs, first) || strings.Contains(logs, second) {
			t.Errorf("a password reached the logs of %s", sp.addr)
		}
	}
}

// TestPairReAddWithoutPassword: a neighbor deleted with an MD5 password
// and added again without one comes back. GoBGP's DeletePeer leaves the
// key on its listening socket (it only clears it when the request names
// the password), which would make the kernel drop the now unsigned
// connections from that neighbor.
func TestPairReAddWithoutPassword(t *testing.T) {
	p := newPair(t)
	p.na.Password, p.nb.Password = state.NewPassword("md5-key"), state.NewPassword("md5-key")
	p.start(t, effects.AddPeer{Neighbor: p.na, Gen: 1})

	mustApply(t, p.a.Executor, effects.DeletePeer{Addr: p.na.Address, Gen: 2})
	mustApply(t, p.b.Executor, effects.DeletePeer{Addr: p.nb.Address, Gen: 2})
	ma := p.a.events.mark()
	p.na.Password, p.nb.Password = state.Password{}, state.Password{}
	mustApply(t, p.a.Executor, effects.AddPeer{Neighbor: p.na, Gen: 3})
	mustApply(t, p.b.Executor, effects.AddPeer{Neighbor: p.nb, Gen: 3})
	if !p.a.events.waitUntil(establishTimeout, func() bool {
		evs := p.a.events.since(ma, p.b.addr)
		return len(evs) > 0 && evs[len(evs)-1].State == "established"
	}) {
		t.Fatalf("re-added without a password, the session never came back: %s", p.a.events.describe(p.b.addr))
	}
	// Both sides up before the test ends: stopping a speaker while its
	// dialling side is still taking the peer's OPEN runs into a data race
	// inside GoBGP v4.8.0 (newWatchEventPeer reads fsm.recvOpen unlocked,
	// pkg/server/server.go:989, while fsmHandler.active writes it,
	// pkg/server/fsm.go:1018).
	p.waitEstablished(t)
}
