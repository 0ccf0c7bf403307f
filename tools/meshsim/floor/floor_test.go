package floor

import (
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/peeragent/peeragent/internal/testrig/netns"
)

func learned(t *testing.T, pfx, from, nh string, withdrawal bool) *apiutil.Path {
	t.Helper()
	nlri, err := bgp.NewIPAddrPrefix(netip.MustParsePrefix(pfx))
	if err != nil {
		t.Fatal(err)
	}
	a, err := bgp.NewPathAttributeNextHop(netip.MustParseAddr(nh))
	if err != nil {
		t.Fatal(err)
	}
	return &apiutil.Path{Family: bgp.RF_IPv4_UC, Nlri: nlri, Withdrawal: withdrawal, PeerAddress: netip.MustParseAddr(from),
		Attrs: []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), a}}
}

// TestKernelRoutes: the best paths GoBGP reports become routes of the main
// table at protocol 201 and metric 1024 via their next hop; a withdrawal
// and re-announcement of the same path in one event (a graceful restart's
// End-of-RIB) changes nothing in the kernel; an own path is left out; the
// last withdrawal deletes the route.
func TestKernelRoutes(t *testing.T) {
	a, _ := netns.Pair(t, netip.MustParsePrefix("10.200.0.1/24"), netip.MustParsePrefix("10.200.0.2/24"))
	h, err := netns.Handle(a.NS)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	k := &kernel{h: h, sets: map[netip.Prefix][]hop{}, installed: map[netip.Prefix][]netip.Addr{}}
	if err := h.RouteReplace(k.route(netip.MustParsePrefix("10.244.1.0/26"), nil)); err != nil {
		t.Fatal(err)
	}
	ours := func() []string {
		rs, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN, Protocol: Protocol},
			netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rs {
			if r.Priority != Metric {
				t.Errorf("route %v: metric %d", r, r.Priority)
			}
			via := "blackhole"
			if r.Type != unix.RTN_BLACKHOLE {
				via = r.Gw.String()
			}
			out = append(out, r.Dst.String()+" "+via)
		}
		slices.Sort(out)
		return out
	}
	log := slog.New(slog.DiscardHandler)
	own := learned(t, "10.244.1.0/26", "10.200.0.1", "10.200.0.1", false)
	own.PeerAddress = netip.Addr{} // an own path has no peer
	k.best([]*apiutil.Path{own, learned(t, "10.244.2.0/26", "10.200.0.2", "10.200.0.2", false)}, log)
	if got, want := ours(), []string{"10.244.1.0/26 blackhole", "10.244.2.0/26 10.200.0.2"}; !slices.Equal(got, want) {
		t.Fatalf("routes %q, want %q", got, want)
	}
	// A route message for every change from here on.
	updates := make(chan netlink.RouteUpdate, 16)
	done := make(chan struct{})
	defer close(done)
	nsh, err := vnetns.GetFromName(a.NS)
	if err != nil {
		t.Fatal(err)
	}
	err = netlink.RouteSubscribeAt(nsh, updates, done)
	nsh.Close()
	if err != nil {
		t.Fatal(err)
	}
	k.best([]*apiutil.Path{learned(t, "10.244.2.0/26", "10.200.0.2", "10.200.0.2", true),
		learned(t, "10.244.2.0/26", "10.200.0.2", "10.200.0.2", false)}, log)
	k.best([]*apiutil.Path{learned(t, "10.244.2.0/26", "10.200.0.2", "10.200.0.2", true)}, log)
	if got, want := ours(), []string{"10.244.1.0/26 blackhole"}; !slices.Equal(got, want) {
		t.Fatalf("routes %q, want %q", got, want)
	}
	var u netlink.RouteUpdate
	select {
	case u = <-updates:
	case <-time.After(5 * time.Second):
		t.Fatal("no route message")
	}
	if u.Type != unix.RTM_DELROUTE || u.Dst.String() != "10.244.2.0/26" {
		t.Errorf("first route message %v %v, want the deletion of 10.244.2.0/26 (the re-announcement changed nothing)", u.Type, u.Dst)
	}
}

// TestSessionsCount: /established serves the number of Established
// sessions.
func TestSessionsCount(t *testing.T) {
	s := &sessions{state: map[netip.Addr]bool{}}
	ev := func(addr string, st bgp.FSMState) *apiutil.WatchEventMessage_PeerEvent {
		e := &apiutil.WatchEventMessage_PeerEvent{Type: apiutil.PEER_EVENT_STATE}
		e.Peer.State.NeighborAddress, e.Peer.State.SessionState = netip.MustParseAddr(addr), st
		return e
	}
	read := func() string {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("GET", "/established", nil))
		return w.Body.String()
	}
	if got := read(); got != "0\n" {
		t.Fatalf("body %q", got)
	}
	s.update(ev("10.200.0.2", bgp.BGP_FSM_ESTABLISHED))
	s.update(ev("10.200.0.3", bgp.BGP_FSM_ESTABLISHED))
	s.update(&apiutil.WatchEventMessage_PeerEvent{Type: apiutil.PEER_EVENT_END_OF_INIT})
	if got := read(); got != "2\n" {
		t.Fatalf("body %q, want 2", got)
	}
	s.update(ev("10.200.0.2", bgp.BGP_FSM_IDLE))
	if got := read(); got != "1\n" {
		t.Fatalf("body %q, want 1", got)
	}
}
