package frr

import (
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReconfigureNeighbors adds and removes neighbors and prefixes live;
// the neighbor that stays keeps its session.
func TestReconfigureNeighbors(t *testing.T) {
	Require(t)
	ctx := withDeadline(t)
	ca, cb := pair(t, 65001, 65002, "k", false)
	a, b := Start(t, ca), Start(t, cb)
	before, _ := establish(t, ctx, a, b)

	nobody := netip.MustParseAddr("127.0.0.9")
	grown := ca
	grown.Neighbors = append(grown.Neighbors[:1:1], Neighbor{Address: nobody, Port: 1790, AS: 65009, Passive: true})
	grown.Announce = []netip.Prefix{netip.MustParsePrefix("10.98.0.0/24")}
	reconfigure(t, a, grown)
	if _, err := a.WaitNeighbor(ctx, nobody, func(n NeighborState) bool { return n.State == "Active" }); err != nil {
		t.Fatalf("added passive neighbor: %v", err)
	}
	if _, err := b.WaitNeighbor(ctx, addrA, func(n NeighborState) bool {
		return n.AddressFamilies["ipv4Unicast"].AcceptedPrefixes == 1
	}); err != nil {
		t.Fatal(err)
	}
	reconfigure(t, a, ca)
	if _, err := a.Neighbor(nobody); err == nil {
		t.Fatal("removed neighbor still there")
	}
	if _, err := b.WaitNeighbor(ctx, addrA, func(n NeighborState) bool {
		return n.AddressFamilies["ipv4Unicast"].AcceptedPrefixes == 0
	}); err != nil {
		t.Fatal(err)
	}
	stillSame(t, a, before)
}

func TestReconfigureRejected(t *testing.T) {
	Require(t)
	ca, _ := pair(t, 65001, 65002, "", false)
	a := Start(t, ca)
	bad := ca
	bad.Neighbors = []Neighbor{{Address: addrB, Port: 1, AS: 65002, Extra: []string{"no such option"}}}
	if err := a.Reconfigure(bad); err == nil {
		t.Fatal("Reconfigure accepted a setting FRR does not know")
	} else {
		t.Logf("rejected as expected: %v", err)
	}
	if got := a.Config(); got.Neighbors[0].Port != ca.Neighbors[0].Port {
		t.Fatalf("Config changed to %+v", got)
	}
	if n, err := a.Neighbor(addrB); err != nil || n.Description != "to_b" {
		t.Fatalf("running config changed: %v (%v)", n, err)
	}
	if strings.Contains(readFile(t, a.ConfigPath()), "no such option") {
		t.Fatal("bgpd.conf rewritten with the rejected config")
	}
	moved := ca
	moved.Port++
	if err := a.Reconfigure(moved); err == nil {
		t.Fatal("Reconfigure accepted a new local port")
	}
}

// TestStartRejectsBadConfig: bgpd goes on running when it cannot apply a
// config line, so Start has vtysh parse the config first (and scans
// bgpd's log for rejected lines after, see TestLogBuffer). Start runs on its own goroutine with a
// testing.TB whose Fatal records the message and ends that goroutine.
func TestStartRejectsBadConfig(t *testing.T) {
	Require(t)
	ca, _ := pair(t, 65001, 65002, "", false)
	ca.Neighbors[0].Extra = []string{"no such option"}
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(ft, ca)
	}()
	<-done
	if !strings.Contains(ft.msg, "rejects the config") || !strings.Contains(ft.msg, "no such option") {
		t.Fatalf("Start did not fail on a rejected line; message: %q", ft.msg)
	}
}

// fatalRecorder is a testing.TB whose Fatal records the message and ends
// the calling goroutine instead of failing the test; the rest (TempDir,
// Cleanup) is the real test's.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = strings.TrimSpace(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (f *fatalRecorder) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func TestStop(t *testing.T) {
	Require(t)
	ca, _ := pair(t, 65001, 65002, "", false)
	a := Start(t, ca)
	a.Stop()
	a.Stop()
	if exited, _ := a.Exited(); !exited {
		t.Fatal("still running after Stop")
	}
	if _, err := a.Neighbors(); err == nil {
		t.Fatal("vtysh still answers after Stop")
	}
}
