package bird

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testdata/show-protocols-all.txt is real BIRD 2.0.12 output: two static
// protocols, an Established session and one refused (Active).
func TestParseProtocols(t *testing.T) {
	got := parseTestdata(t, "show-protocols-all.txt")
	tests := []struct {
		name  string
		proto string
		check func(t *testing.T, p ProtocolState)
	}{
		{name: "established-session", proto: "to_b", check: checkToB},
		{name: "refused-session", proto: "nobody", check: checkNobody},
		{name: "static-channel", proto: "announce6", check: func(t *testing.T, p ProtocolState) {
			want := ChannelState{Name: "ipv6", State: "UP", Imported: 1, Preferred: 1,
				ImportUpdates: RouteStats{Received: 1, Accepted: 1}}
			if diff := cmp.Diff(want, p.Channels["ipv6"], cmpNoDetails); diff != "" {
				t.Errorf("ipv6 channel (-want +got):\n%s", diff)
			}
		}},
		{name: "device-summary-only", proto: "device1", check: func(t *testing.T, p ProtocolState) {
			if p.Proto != "Device" || p.State != "up" || p.Info != "" || len(p.Channels) != 0 {
				t.Errorf("device1 = %+v", p)
			}
		}},
	}
	if len(got) != 5 {
		t.Errorf("parsed %d protocols, want 5: %v", len(got), got)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := got[tc.proto]
			if !ok {
				t.Fatalf("no protocol %q", tc.proto)
			}
			tc.check(t, p)
		})
	}
}

var cmpNoDetails = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Details" }, cmp.Ignore())

func checkToB(t *testing.T, p ProtocolState) {
	since := time.Date(2026, 11, 29, 16, 46, 23, 32391000, time.Local)
	if !p.Since.Equal(since) || p.SinceText != "2026-11-29 16:46:23.032391" {
		t.Errorf("Since = %v (%q), want %v", p.Since, p.SinceText, since)
	}
	if !p.Established() || p.Info != "Established" || p.LastError != "" {
		t.Errorf("state: %v, info %q", p, p.Info)
	}
	if p.Details["Neighbor AS"] != "65002" || p.Details["Hold timer"] != "234.214/240" {
		t.Errorf("details: %v", p.Details)
	}
	if _, ok := p.Details["AF announced"]; ok {
		t.Errorf("capability lines leaked into details: %v", p.Details)
	}
	// BIRD's default graceful restart (aware): the capability, no lines.
	wantCaps := map[string]map[string]string{
		"Multiprotocol": {"AF announced": "ipv4"}, "Route refresh": {}, "Graceful restart": {},
		"4-octet AS numbers": {}, "Enhanced refresh": {}, "Long-lived graceful restart": {},
	}
	if diff := cmp.Diff(wantCaps, p.LocalCaps); diff != "" {
		t.Errorf("LocalCaps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantCaps, p.NeighborCaps); diff != "" {
		t.Errorf("NeighborCaps (-want +got):\n%s", diff)
	}
	want := ChannelState{Name: "ipv4", State: "UP", Exported: 1,
		ExportUpdates: RouteStats{Received: 1, Accepted: 1}}
	if diff := cmp.Diff(want, p.Channels["ipv4"], cmpNoDetails); diff != "" {
		t.Errorf("ipv4 channel (-want +got):\n%s", diff)
	}
	if got := p.Channels["ipv4"].Details["BGP Next hop"]; got != "127.0.0.1" {
		t.Errorf("BGP Next hop = %q", got)
	}
}

func checkNobody(t *testing.T, p ProtocolState) {
	if p.Established() || p.State != "start" || p.BGPState != "Active" {
		t.Errorf("state: %v", p)
	}
	if p.LastError != "Socket: Connection refused" {
		t.Errorf("LastError = %q", p.LastError)
	}
	if p.Info != "Active        Socket: Connection refused" {
		t.Errorf("Info = %q", p.Info)
	}
	if p.Channels["ipv4"].State != "DOWN" {
		t.Errorf("channel: %+v", p.Channels["ipv4"])
	}
	if p.LocalCaps != nil || p.NeighborCaps != nil {
		t.Errorf("capabilities of a session that is not up: %v, %v", p.LocalCaps, p.NeighborCaps)
	}
}

// testdata/show-protocols-gr.txt is real BIRD 2.0.12 output of a session
// with `graceful restart on` on both sides, restart times 8 s (BIRD) and
// 10 s (its peer).
func TestParseProtocolsGracefulRestart(t *testing.T) {
	got := parseTestdata(t, "show-protocols-gr.txt")
	p := got["to_b"]
	gr := func(secs string) map[string]string {
		return map[string]string{"Restart time": secs, "AF supported": "ipv4", "AF preserved": ""}
	}
	if diff := cmp.Diff(gr("8"), p.LocalCaps["Graceful restart"]); diff != "" {
		t.Errorf("local graceful restart (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(gr("10"), p.NeighborCaps["Graceful restart"]); diff != "" {
		t.Errorf("neighbor graceful restart (-want +got):\n%s", diff)
	}
	if len(p.LocalCaps) != 6 || len(p.NeighborCaps) != 6 {
		t.Errorf("capabilities: local %v, neighbor %v; want 6 each", p.LocalCaps, p.NeighborCaps)
	}
	// The lines after the lists are details again.
	if p.Details["Session"] != "external multihop AS4" || p.Details["Source address"] != "127.0.0.71" {
		t.Errorf("details after the capability lists: %v", p.Details)
	}
	if _, ok := p.Details["Restart time"]; ok {
		t.Errorf("capability lines leaked into details: %v", p.Details)
	}
}

func TestSameSessionAs(t *testing.T) {
	base := ProtocolState{State: "up", BGPState: "Established",
		Since: time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local), SinceText: "x"}
	shifted := func(d time.Duration) ProtocolState { p := base; p.Since = p.Since.Add(d); return p }
	down := base
	down.State, down.BGPState = "start", "Active"
	tests := []struct {
		name string
		now  ProtocolState
		want bool
	}{
		{name: "identical", now: base, want: true},
		{name: "query-jitter", now: shifted(-40 * time.Microsecond), want: true},
		{name: "re-established-later", now: shifted(870 * time.Millisecond), want: false},
		{name: "not-established", now: down, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.now.SameSessionAs(base); got != tc.want {
				t.Errorf("SameSessionAs = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseProtocolsRejectsGarbage(t *testing.T) {
	if _, err := ParseProtocols("  orphan detail: 1\n"); err == nil {
		t.Error("detail before any protocol accepted")
	}
	if _, err := ParseProtocols("x BGP --- up 2026-01-01 00:00:00.0 Established\n  Channel ipv4\n    Routes: many\n"); err == nil {
		t.Error("bad Routes line accepted")
	}
}

func TestLogBufferCountsEstablishments(t *testing.T) {
	var l logBuffer
	for _, chunk := range []string{
		"2026-11-29 16:44:22.693 <TRACE> to_b: BGP sess", "ion established\n",
		"2026-11-29 16:44:22.693 <TRACE> to_b: State changed to up\n",
		"2026-11-29 16:44:25.154 <TRACE> to_b: BGP session established\n2026-11-29 <TRACE> other: BGP session established",
	} {
		if _, err := l.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.establishedCount("to_b"); got != 2 {
		t.Errorf("to_b = %d, want 2", got)
	}
	if got := l.establishedCount("other"); got != 0 {
		t.Errorf("unfinished line counted: other = %d", got)
	}
}

// parseTestdata is ParseProtocols of testdata/name, failing t on an error.
func parseTestdata(t *testing.T, name string) map[string]ProtocolState {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseProtocols(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	return got
}
