package gobgp

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// resetCase is one neighbor setting changed on an Established session.
type resetCase struct {
	name   string // row label
	field  string // the effects/classify.go field it measures; "" for a combined change
	base   func(*state.Neighbor)
	change func(*state.Neighbor)
	raw    bool                 // call GoBGP's UpdatePeer alone, bypassing the executor
	shows  func(*api.Peer) bool // ListPeer shows the new value afterwards
}

func resetCases() []resetCase {
	none := func(*state.Neighbor) {}
	ttlSecurity := func(n *state.Neighbor) { n.TTLMin, n.EBGPMultihopTTL = 254, 0 }
	reflector := func(n *state.Neighbor) { n.RouteReflectorClient, n.RouteReflectorClusterID = true, "10.255.0.1" }
	rrClient := func(n *state.Neighbor) { n.RouteReflectorClient = true }
	rrCluster := func(n *state.Neighbor) { n.RouteReflectorClusterID = "10.255.0.2" }
	return []resetCase{
		{"peerASN", "peerASN", none, func(n *state.Neighbor) { n.PeerASN = 64599 }, false,
			func(p *api.Peer) bool { return p.Conf.PeerAsn == 64599 }},
		{"localASN", "localASN", none, func(n *state.Neighbor) { n.LocalASN = 64598 }, false,
			func(p *api.Peer) bool { return p.Conf.LocalAsn == 64598 }},
		{"password", "password", none, func(n *state.Neighbor) { n.Password = state.NewPassword("measure-secret") }, false,
			func(p *api.Peer) bool { return p.Conf.AuthPassword == "measure-secret" }},
		{"port", "port", none, func(n *state.Neighbor) { n.Port = 1 }, false,
			func(p *api.Peer) bool { return p.Transport.RemotePort == 1 }},
		{"sourceAddress", "sourceAddress", none, func(n *state.Neighbor) { n.SourceAddress = netip.Addr{} }, false,
			func(p *api.Peer) bool { return p.Transport.LocalAddress != "127.0.0.1" }},
		{"passive", "passive", none, func(n *state.Neighbor) { n.Passive = false }, false,
			func(p *api.Peer) bool { return !p.Transport.PassiveMode }},
		{"families", "families", none, func(n *state.Neighbor) { n.Families = []string{"ipv4-unicast", "l3vpn-ipv4-unicast"} }, false,
			func(p *api.Peer) bool { return len(p.AfiSafis) == 2 }},
		{"gracefulRestartSeconds", "gracefulRestartSeconds", none, func(n *state.Neighbor) { n.GracefulRestartSeconds = 90 }, false,
			func(p *api.Peer) bool { return p.GracefulRestart.RestartTime == 90 }},
		{"keepaliveSeconds", "keepaliveSeconds", none, func(n *state.Neighbor) { n.KeepaliveSeconds = 7 }, false,
			func(p *api.Peer) bool { return p.Timers.Config.KeepaliveInterval == 7 }},
		{"keepaliveSeconds, GoBGP UpdatePeer alone", "", none, func(n *state.Neighbor) { n.KeepaliveSeconds = 7 }, true,
			func(p *api.Peer) bool { return p.Timers.State.KeepaliveInterval == 7 }},
		{"allowOwnASN", "allowOwnASN", none, func(n *state.Neighbor) { n.AllowOwnASN = 1 }, false,
			func(p *api.Peer) bool { return p.Conf.AllowOwnAsn == 1 }},
		{"ttlMin", "ttlMin", ttlSecurity, func(n *state.Neighbor) { n.TTLMin = 250 }, false,
			func(p *api.Peer) bool { return p.TtlSecurity.TtlMin == 250 }},
		{"ebgpMultihopTTL", "ebgpMultihopTTL", none, func(n *state.Neighbor) { n.EBGPMultihopTTL = 64 }, false,
			func(p *api.Peer) bool { return p.EbgpMultihop.MultihopTtl == 64 }},
		{"maxPrefixes", "maxPrefixes", none, func(n *state.Neighbor) { n.MaxPrefixes = 777 }, false,
			func(p *api.Peer) bool {
				return len(p.AfiSafis) > 0 && p.AfiSafis[0].GetPrefixLimits().GetMaxPrefixes() == 777
			}},
		{"ttlSecurity on (ttlMin + ebgpMultihopTTL)", "", none, ttlSecurity, false,
			func(p *api.Peer) bool { return p.TtlSecurity.Enabled && !p.EbgpMultihop.Enabled }},
		{"routeReflectorClient", "routeReflectorClient", none, rrClient, false,
			func(p *api.Peer) bool { return p.RouteReflector.RouteReflectorClient }},
		{"routeReflectorClusterID", "routeReflectorClusterID", reflector, rrCluster, false,
			func(p *api.Peer) bool { return p.RouteReflector.RouteReflectorClusterId == "10.255.0.2" }},
		{"routeReflectorClient, GoBGP UpdatePeer alone", "", none, rrClient, true,
			func(p *api.Peer) bool { return p.RouteReflector.RouteReflectorClient }},
		{"routeReflectorClusterID, GoBGP UpdatePeer alone", "", reflector, rrCluster, true,
			func(p *api.Peer) bool { return p.RouteReflector.RouteReflectorClusterId == "10.255.0.2" }},
	}
}

// measured is what happened to one case's session in the window.
type measured struct {
	reset   bool
	applied bool
	first   string        // first state reported after the update, with reason
	after   time.Duration // from the end of Execute to that report
}

// TestMeasureUpdateResets measures, for every speaker-visible neighbor
// setting of effects/classify.go, whether an UpdatePeer on an Established
// session resets it, and fails if classify.go says otherwise. Each setting
// has its own session (127.0.0.1 to 127.0.0.20+i, one remote speaker
// each), so all are measured at once in one window. Run with -v to see the
// table that docs/gobgp-updates.md reproduces.
func TestMeasureUpdateResets(t *testing.T) {
	cases := resetCases()
	remotes := make([]string, len(cases))
	for i := range cases {
		remotes[i] = fmt.Sprintf("127.0.0.%d", 20+i)
	}
	requireLoopback(t, remotes...)
	checkCoverage(t, cases)
	a, bases, changed := establishAll(t, cases, remotes)

	mark, sent := a.events.mark(), time.Now()
	var updates []effects.Effect
	for i, c := range cases {
		if c.raw {
			p, _ := peerFor(changed[i])
			if _, err := a.Speaker().UpdatePeer(context.Background(), &api.UpdatePeerRequest{Peer: p}); err != nil {
				t.Fatalf("%s: GoBGP UpdatePeer: %v", c.name, err)
			}
			continue
		}
		ch, reset := effects.Classify(bases[i], changed[i])
		updates = append(updates, effects.UpdatePeer{Old: bases[i], New: changed[i], Gen: 2, Changes: ch, Reset: reset})
	}
	mustApply(t, a.Executor, updates...)
	a.events.waitUntil(quietWindow, func() bool { return false }) // the observation window

	results := make([]measured, len(cases))
	for i, c := range cases {
		results[i] = observe(t, a, mark, remotes[i], sent, c)
	}
	t.Log("measured table:\n" + table(cases, bases, changed, results))
	for i, c := range cases {
		check(t, c, bases[i], changed[i], results[i])
	}
}

// establishAll starts the local speaker and one remote per case, and
// brings every case's session (in its base config) to Established. It
// returns each case's config before and after its change.
func establishAll(t *testing.T, cases []resetCase, remotes []string) (*speaker, []*state.Neighbor, []*state.Neighbor) {
	t.Helper()
	a := newSpeaker(t, "127.0.0.1")
	mustApply(t, a.Executor, effects.StartServer{Server: a.server(64512)})
	bases, changed := make([]*state.Neighbor, len(cases)), make([]*state.Neighbor, len(cases))
	var adds []effects.Effect
	for i, c := range cases {
		b := newSpeaker(t, remotes[i])
		mustApply(t, b.Executor, effects.StartServer{Server: b.server(64513)},
			effects.AddPeer{Neighbor: neighborOf(b, a, 64513, 64512), Gen: 1})
		bases[i] = neighborOf(a, b, 64512, 64513)
		bases[i].Passive = true
		c.base(bases[i])
		n := *bases[i]
		c.change(&n)
		changed[i] = &n
		adds = append(adds, effects.AddPeer{Neighbor: bases[i], Gen: 1})
	}
	mustApply(t, a.Executor, adds...)
	for _, r := range remotes {
		a.events.waitState(t, r, "established", 2*establishTimeout)
	}
	return a, bases, changed
}

func observe(t *testing.T, a *speaker, mark int, remote string, sent time.Time, c resetCase) measured {
	var m measured
	for _, ev := range a.events.since(mark, remote) {
		if ev.State != "established" && !m.reset {
			m.reset, m.after = true, ev.At.Sub(sent)
			m.first = ev.State
			if ev.Reason != "" {
				m.first += " (" + ev.Reason + ")"
			}
		}
	}
	p, ok, err := a.currentPeer(context.Background(), netip.MustParseAddr(remote))
	if err != nil || !ok {
		t.Fatalf("%s: ListPeer: %v, found %v", c.name, err, ok)
	}
	m.applied = c.shows(p)
	return m
}

// check compares a measurement with effects/classify.go, the single place
// the classification lives.
func check(t *testing.T, c resetCase, base, changed *state.Neighbor, m measured) {
	t.Helper()
	if c.raw {
		return // GoBGP's own behaviour, shown for the record
	}
	if !m.applied {
		t.Errorf("%s: the executor's UpdatePeer did not take effect", c.name)
	}
	ch, reset := effects.Classify(base, changed)
	if c.field != "" && (len(ch) != 1 || ch[0].Field != c.field) {
		t.Errorf("%s: the change is %v, want exactly %s", c.name, ch, c.field)
	}
	if reset != m.reset {
		t.Errorf("%s: effects/classify.go says reset=%v, measured reset=%v: fix the fields table", c.name, reset, m.reset)
	}
}

// checkCoverage: every field of classify.go's table has a measurement.
func checkCoverage(t *testing.T, cases []resetCase) {
	reset, inPlace := effects.ResetFields()
	for _, f := range append(reset, inPlace...) {
		found := false
		for _, c := range cases {
			found = found || (c.field == f && !c.raw)
		}
		if !found {
			t.Errorf("field %s of effects/classify.go has no measurement case", f)
		}
	}
}

func table(cases []resetCase, bases, changed []*state.Neighbor, rs []measured) string {
	var b strings.Builder
	b.WriteString("| setting | change | session | takes effect | first report (reason) |\n|---|---|---|---|---|\n")
	for i, c := range cases {
		ch, _ := effects.Classify(bases[i], changed[i])
		parts := make([]string, len(ch))
		for j, x := range ch {
			parts[j] = x.String()
		}
		sess, first := "kept (in place)", "none in "+quietWindow.String()
		if rs[i].reset {
			sess, first = "reset", fmt.Sprintf("%s after %s", rs[i].first, rs[i].after.Round(time.Millisecond))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %v | %s |\n", c.name, strings.Join(parts, ", "), sess, yesNo(rs[i].applied), first)
	}
	return b.String()
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}
