package bird

import (
	"context"
	"net/netip"
	"reflect"
	"strconv"
	"testing"
	"time"
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
