package bird

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/internal/testrig/daemon"
)

// testDeadline bounds every wait in these tests.
const testDeadline = 30 * time.Second

var (
	addrA = netip.MustParseAddr("127.0.0.1")
	addrB = netip.MustParseAddr("127.0.0.2")
)

// pair is two BIRD configs peering with each other: A on 127.0.0.1 and B
// on 127.0.0.2, each with one neighbor named "to_a" / "to_b".
func pair(t *testing.T, asA, asB uint32, password string, passiveB bool) (Config, Config) {
	t.Helper()
	portA, portB := FreePort(t, addrA), FreePort(t, addrB)
	a := Config{Address: addrA, Port: portA, AS: asA, Neighbors: []Neighbor{{
		Name: "to_b", Address: addrB, Port: portB, AS: asB, Password: password,
	}}}
	b := Config{Address: addrB, Port: portB, AS: asB, Neighbors: []Neighbor{{
		Name: "to_a", Address: addrA, Port: portA, AS: asA, Password: password, Passive: passiveB,
	}}}
	return a, b
}

func withDeadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	t.Cleanup(cancel)
	return ctx
}

func establish(t *testing.T, ctx context.Context, a, b *Bird) (ProtocolState, ProtocolState) {
	t.Helper()
	pa, err := a.WaitEstablished(ctx, "to_b")
	if err != nil {
		t.Fatal(err)
	}
	pb, err := b.WaitEstablished(ctx, "to_a")
	if err != nil {
		t.Fatal(err)
	}
	return pa, pb
}

func TestTwoBirdsEstablish(t *testing.T) {
	Require(t)
	tests := []struct {
		name      string
		asA, asB  uint32
		password  string
		passiveB  bool
		wantSessn string
	}{
		{name: "ebgp-plain", asA: 65001, asB: 65002, wantSessn: "external multihop AS4"},
		{name: "ebgp-md5", asA: 65001, asB: 65002, password: "s3cret-md5", wantSessn: "external multihop AS4"},
		{name: "ibgp-md5-passive", asA: 65010, asB: 65010, password: `back\slash`, passiveB: true,
			wantSessn: "internal multihop AS4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := withDeadline(t)
			ca, cb := pair(t, tc.asA, tc.asB, tc.password, tc.passiveB)
			ca.Announce = []netip.Prefix{netip.MustParsePrefix("10.99.0.0/24")}
			a, b := Start(t, ca), Start(t, cb)
			pa, _ := establish(t, ctx, a, b)
			checkEstablished(t, pa, tc.asB, tc.wantSessn)
			// B imports A's announced prefix: the channel counters parse.
			pb, err := b.WaitProtocol(ctx, "to_a", func(p ProtocolState) bool {
				return p.Channels["ipv4"].Imported == 1
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := pb.Channels["ipv4"].ImportUpdates.Accepted; got != 1 {
				t.Errorf("B import updates accepted = %d, want 1\n%+v", got, pb.Channels["ipv4"])
			}
		})
	}
}

func checkEstablished(t *testing.T, p ProtocolState, peerAS uint32, wantSession string) {
	t.Helper()
	if p.Proto != "BGP" || p.State != "up" || p.Info != "Established" || p.Since.IsZero() {
		t.Errorf("summary columns: %+v", p)
	}
	if got, want := p.Details["Neighbor AS"], strconv.FormatUint(uint64(peerAS), 10); got != want {
		t.Errorf("Neighbor AS = %q, want %q", got, want)
	}
	if got := p.Details["Session"]; got != wantSession {
		t.Errorf("Session = %q, want %q", got, wantSession)
	}
	if ch := p.Channels["ipv4"]; ch.State != "UP" {
		t.Errorf("ipv4 channel = %+v, want UP", ch)
	}
}

// TestMD5Mismatch proves the MD5 key is really applied on loopback: with
// different keys the kernel drops the segments and BIRD never leaves
// Connect/Active.
func TestMD5Mismatch(t *testing.T) {
	Require(t)
	ca, cb := pair(t, 65001, 65002, "key-one", false)
	cb.Neighbors[0].Password = "key-two"
	a, b := Start(t, ca), Start(t, cb)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	if p, err := a.WaitEstablished(ctx, "to_b"); err == nil {
		t.Fatalf("established with mismatched MD5 keys: %v", p)
	}
	if p, _ := b.Protocol("to_a"); p.Established() || p.BGPState == "" {
		t.Fatalf("B: %v, want a BGP state other than Established", p)
	}
}

// TestReconfigure shows the "no reset" evidence: an identical
// configuration keeps Since, a password rotation on both sides moves it.
func TestReconfigure(t *testing.T) {
	Require(t)
	ctx := withDeadline(t)
	ca, cb := pair(t, 65001, 65002, "old-key", false)
	a, b := Start(t, ca), Start(t, cb)
	before, _ := establish(t, ctx, a, b)

	t.Run("identical-config-keeps-session", func(t *testing.T) {
		reconfigure(t, a, ca)
		reconfigure(t, b, cb)
		time.Sleep(1500 * time.Millisecond) // a restart would show by now
		after, err := a.Protocol("to_b")
		if err != nil {
			t.Fatal(err)
		}
		if !after.SameSessionAs(before) {
			t.Fatalf("session changed: before %v, after %v", before, after)
		}
		if n := a.Establishments("to_b"); n != 1 {
			t.Fatalf("A logged %d establishments, want 1", n)
		}
	})
	t.Run("password-rotation-re-establishes", func(t *testing.T) {
		ca.Neighbors[0].Password, cb.Neighbors[0].Password = "new-key", "new-key"
		reconfigure(t, a, ca)
		reconfigure(t, b, cb)
		after, err := a.WaitProtocol(ctx, "to_b", func(p ProtocolState) bool {
			return p.Established() && p.Since.After(before.Since)
		})
		if err != nil {
			t.Fatal(err)
		}
		if after.SameSessionAs(before) {
			t.Fatalf("rotation did not reset: %v", after)
		}
		if n := a.Establishments("to_b"); n != 2 {
			t.Fatalf("A logged %d establishments, want 2", n)
		}
		before = after
	})
	t.Run("reset-by-peer-moves-since", func(t *testing.T) {
		if _, err := b.Exec("restart", "to_a"); err != nil {
			t.Fatal(err)
		}
		after, err := a.WaitProtocol(ctx, "to_b", func(p ProtocolState) bool {
			return p.Established() && !p.SameSessionAs(before)
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("A re-established %v after the peer's restart: %v", after.Since.Sub(before.Since), after)
		t.Logf("A ipv4 channel: %+v", after.Channels["ipv4"])
	})
}

func reconfigure(t *testing.T, b *Bird, cfg Config) {
	t.Helper()
	if err := b.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	}
}

func TestReconfigureRejected(t *testing.T) {
	Require(t)
	ca, _ := pair(t, 65001, 65002, "", false)
	a := Start(t, ca)
	bad := ca
	bad.Neighbors = []Neighbor{{Name: "bad", Address: addrB, Port: 1, AS: 1, Extra: []string{"no such option"}}}
	if err := a.Reconfigure(bad); err == nil {
		t.Fatal("Reconfigure accepted a config BIRD cannot parse")
	}
	if _, err := a.Protocol("to_b"); err != nil {
		t.Fatalf("old config no longer active: %v", err)
	}
	if err := a.Reconfigure(ca); err != nil {
		t.Fatalf("bird.conf was not restored: %v", err)
	}
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
	if _, err := a.Protocols(); err == nil {
		t.Fatal("control socket still answers after Stop")
	}
}

// TestConfigIsCopied: Bird keeps its own copy of the config, so the
// caller's slices, changed after Start or Reconfigure or in what Config
// returned, do not change what Config says BIRD runs.
func TestConfigIsCopied(t *testing.T) {
	Require(t)
	ca, _ := pair(t, 65001, 65002, "key", false)
	ca.Neighbors[0].Extra = []string{"hold time 9"}
	ca.Announce = []netip.Prefix{netip.MustParsePrefix("10.99.0.0/24")}
	a := Start(t, ca)
	want := a.Config()
	scribble := func(c Config) {
		c.Neighbors[0].Password = "changed"
		c.Neighbors[0].Extra[0] = "changed"
		c.Announce[0] = netip.Prefix{}
	}
	check := func(step string) {
		t.Helper()
		if got := a.Config(); !reflect.DeepEqual(got, want) || got.Neighbors[0].Password != "key" {
			t.Fatalf("%s: Config = %+v, want %+v", step, got, want)
		}
	}
	scribble(ca)
	check("after changing Start's argument")
	scribble(a.Config())
	check("after changing what Config returned")

	cb := want.clone()
	cb.Neighbors[0].Extra[0] = "hold time 12"
	if err := a.Reconfigure(cb); err != nil {
		t.Fatal(err)
	}
	want = cb.clone()
	scribble(cb)
	check("after changing Reconfigure's argument")
}

// netnsDep is what TestKillInNetns needs beyond BIRD.
var netnsDep = daemon.Dependency{What: "network namespace (root and iproute2's ip)", Tests: "TestKillInNetns"}

// TestKillInNetns: two BIRDs in a network namespace of the test's own,
// graceful restart on with different restart times, each shown in the
// other's capabilities; Kill ends A at once (no Cease: B's session breaks
// as a read failure) and B's session leaves Established.
func TestKillInNetns(t *testing.T) {
	Require(t)
	if os.Geteuid() != 0 {
		netnsDep.Missing(t, "!!! NOT ROOT: the test creates a network namespace.")
	}
	ip, err := daemon.LookPath(sbinDirs, "ip")
	if err != nil {
		netnsDep.Missing(t, "!!! NO ip (iproute2): "+err.Error())
	}
	ns := fmt.Sprintf("peeragent-t-bird-%06x", rand.Uint32()&0xffffff)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", ns)
	t.Cleanup(func() {
		if out, err := exec.Command(ip, "netns", "del", ns).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v\n%s", ns, err, out)
		}
	})
	run("-n", ns, "link", "set", "lo", "up")

	ctx := withDeadline(t)
	ca := Config{Address: addrA, Port: 179, AS: 65001, Netns: ns, Neighbors: []Neighbor{{
		Name: "to_b", Address: addrB, Port: 179, AS: 65002, GracefulRestart: "on", GracefulRestartTime: 6}}}
	cb := Config{Address: addrB, Port: 179, AS: 65002, Netns: ns, Neighbors: []Neighbor{{
		Name: "to_a", Address: addrA, Port: 179, AS: 65001, GracefulRestart: "on", GracefulRestartTime: 9}}}
	a, b := Start(t, ca), Start(t, cb)
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", a.proc.Pid())); err != nil || got == own {
		t.Fatalf("BIRD's network namespace %q (%v), the test's %q: want another", got, err, own)
	}
	pa, _ := establish(t, ctx, a, b)
	if got := pa.LocalCaps["Graceful restart"]; got["Restart time"] != "6" || got["AF supported"] != "ipv4" {
		t.Errorf("A's own graceful restart = %v, want restart time 6, ipv4", got)
	}
	if got := pa.NeighborCaps["Graceful restart"]; got["Restart time"] != "9" || got["AF supported"] != "ipv4" {
		t.Errorf("B's graceful restart seen by A = %v, want restart time 9, ipv4", got)
	}

	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	if exited, status := a.Exited(); !exited || status == nil || !strings.Contains(status.Error(), "killed") {
		t.Fatalf("A after Kill: exited %v, status %v; want signal: killed", exited, status)
	}
	pb, err := b.WaitProtocol(ctx, "to_a", func(p ProtocolState) bool { return !p.Established() })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(pb.LastError, "Cease") {
		t.Errorf("B's session ended with %q: A sent a NOTIFICATION, it was not killed", pb.LastError)
	}
	t.Logf("B after A was killed: %s", pb)
}
