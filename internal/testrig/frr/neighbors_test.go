package frr

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// testdata/show-bgp-neighbors.json is real FRR 8.4.4 output: an
// Established eBGP session with MD5 (which had been reset once), a passive
// iBGP neighbor and an eBGP neighbor refusing connections (both Active).
func TestParseNeighbors(t *testing.T) {
	raw, err := os.ReadFile("testdata/show-bgp-neighbors.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseNeighbors(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Errorf("parsed %d neighbors, want 3: %v", len(got), got)
	}
	ignore := cmpopts.IgnoreFields(NeighborState{}, "Raw", "Messages", "AddressFamilies")
	tests := []struct {
		name string
		addr string
		want NeighborState
	}{
		{name: "established-md5", addr: "127.0.0.2", want: NeighborState{
			Address: "127.0.0.2", Description: "to_b", RemoteAS: 65002, LocalAS: 65001,
			State: "Established", RemoteRouterID: "127.0.0.2", Hostname: "frr-b",
			ConnectionsEstablished: 2, ConnectionsDropped: 1, LastResetReason: "No AFI/SAFI activated for peer",
			HostLocal: "127.0.0.1", PortLocal: 17901, HostForeign: "127.0.0.2", PortForeign: 41791,
			Uptime: time.Second, EstablishedAt: time.Unix(1795972510, 0), MD5: true,
			NexthopGlobal: "::", NexthopLocal: "::", Connection: "nonSharedNetwork",
		}},
		{name: "passive-ibgp", addr: "127.0.0.8", want: NeighborState{
			Address: "127.0.0.8", RemoteAS: 65001, LocalAS: 65001, State: "Active", RemoteRouterID: "0.0.0.0",
			HostLocal: "Unknown", PortLocal: -1, HostForeign: "Unknown", PortForeign: -1,
			LastResetReason: "No AFI/SAFI activated for peer",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, got[tc.addr], ignore); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	t.Run("counters", func(t *testing.T) {
		n := got["127.0.0.2"]
		wantMsgs := MessageStats{OpensSent: 3, OpensRecv: 3, NotificationsSent: 1, NotificationsRecv: 2,
			UpdatesSent: 2, UpdatesRecv: 1, KeepalivesSent: 2, KeepalivesRecv: 2, TotalSent: 8, TotalRecv: 8}
		if diff := cmp.Diff(wantMsgs, n.Messages); diff != "" {
			t.Errorf("messages (-want +got):\n%s", diff)
		}
		if af, ok := n.AddressFamilies["ipv4Unicast"]; !ok || af != (AddressFamily{}) {
			t.Errorf("ipv4Unicast = %+v, %v", af, ok)
		}
		if !strings.Contains(string(n.Raw), `"bgpTimerHoldTimeMsecs":9000`) {
			t.Errorf("Raw lacks the hold time: %.200s", n.Raw)
		}
	})
}

func TestParseNeighborsRejectsGarbage(t *testing.T) {
	for _, out := range []string{"% Unknown command", `{"bgpNoSuchNeighbor":true}`, `{"x":{"remoteAs":"not a number"}}`} {
		if _, err := ParseNeighbors(out); err == nil {
			t.Errorf("accepted %q", out)
		}
	}
	if got, err := ParseNeighbors("{}"); err != nil || len(got) != 0 {
		t.Errorf("no neighbors: %v, %v", got, err)
	}
}

func TestSameSessionAs(t *testing.T) {
	base := NeighborState{State: "Established", ConnectionsEstablished: 3, ConnectionsDropped: 2, Uptime: time.Minute}
	with := func(f func(n *NeighborState)) NeighborState { n := base; f(&n); return n }
	tests := []struct {
		name string
		now  NeighborState
		want bool
	}{
		{name: "identical", now: base, want: true},
		{name: "uptime-grew", now: with(func(n *NeighborState) { n.Uptime += time.Hour }), want: true},
		{name: "re-established", now: with(func(n *NeighborState) { n.ConnectionsEstablished++; n.ConnectionsDropped++ }), want: false},
		{name: "down", now: with(func(n *NeighborState) { n.State = "Active"; n.ConnectionsDropped++ }), want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.now.SameSessionAs(base); got != tc.want {
				t.Errorf("SameSessionAs = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLogBuffer(t *testing.T) {
	var l logBuffer
	for _, chunk := range []string{
		"2026/11/29 17:14:23 BGP: [SHWNK-NWT5S][EC 100663304] No such command on con",
		"fig line 4:  neighbor 127.0.0.2 bogus\n2026/11/29 17:14:23 BGP: fine\n",
		"2026/11/29 17:14:24 BGP: unfinished on config line",
	} {
		if _, err := l.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"2026/11/29 17:14:23 BGP: [SHWNK-NWT5S][EC 100663304] No such command on config line 4:  neighbor 127.0.0.2 bogus"}
	if diff := cmp.Diff(want, l.errors()); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if !strings.HasSuffix(l.String(), "unfinished on config line") {
		t.Errorf("String lost output: %q", l.String())
	}
}
