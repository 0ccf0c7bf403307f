package frr

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// testDeadline bounds every wait in these tests.
const testDeadline = 30 * time.Second

var (
	addrA = netip.MustParseAddr("127.0.0.1")
	addrB = netip.MustParseAddr("127.0.0.2")
)

// pair is two FRR configs peering with each other: A on 127.0.0.1 and B on
// 127.0.0.2, each on its own port, so both bgpd run at once.
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

func establish(t *testing.T, ctx context.Context, a, b *FRR) (NeighborState, NeighborState) {
	t.Helper()
	na, err := a.WaitEstablished(ctx, addrB)
	if err != nil {
		t.Fatal(err)
	}
	nb, err := b.WaitEstablished(ctx, addrA)
	if err != nil {
		t.Fatal(err)
	}
	return na, nb
}

func TestTwoFRRsEstablish(t *testing.T) {
	Require(t)
	tests := []struct {
		name     string
		asA, asB uint32
		password string
		passiveB bool
	}{
		{name: "ebgp-plain", asA: 65001, asB: 65002},
		{name: "ebgp-md5", asA: 65001, asB: 65002, password: "s3cret-md5"},
		{name: "ibgp-md5-passive", asA: 65010, asB: 65010, password: `back\slash!#"'`, passiveB: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := withDeadline(t)
			ca, cb := pair(t, tc.asA, tc.asB, tc.password, tc.passiveB)
			ca.Announce = []netip.Prefix{netip.MustParsePrefix("10.99.0.0/24")}
			a, b := Start(t, ca), Start(t, cb)
			na, _ := establish(t, ctx, a, b)
			checkEstablished(t, na, tc.asB, tc.password != "")
			// B accepts A's prefix, next hop 127.0.0.1 and all, and the
			// session stays up (no "Invalid NEXT_HOP" NOTIFICATION).
			nb, err := b.WaitNeighbor(ctx, addrA, func(n NeighborState) bool {
				return n.AddressFamilies["ipv4Unicast"].AcceptedPrefixes == 1
			})
			if err != nil {
				t.Fatal(err)
			}
			if nb.ConnectionsEstablished != 1 || nb.ConnectionsDropped != 0 || nb.Messages.NotificationsRecv != 0 {
				t.Errorf("B's session was reset: %v, messages %+v", nb, nb.Messages)
			}
			// Route reads B's table: the prefix via A, and nothing for one
			// never announced.
			r, out, err := b.Route(ca.Announce[0])
			if err != nil || r.Prefix != "10.99.0.0/24" || len(r.Paths) != 1 || len(r.Paths[0].Nexthops) != 1 ||
				r.Paths[0].Nexthops[0].IP != addrA.String() {
				t.Errorf("B's route 10.99.0.0/24: %+v, %v\n%s", r, err, out)
			}
			if r, out, err := b.Route(netip.MustParsePrefix("10.98.0.0/24")); err != nil || r.Prefix != "" || len(r.Paths) != 0 {
				t.Errorf("B's route 10.98.0.0/24, never announced: %+v, %v\n%s", r, err, out)
			}
		})
	}
}

func checkEstablished(t *testing.T, n NeighborState, peerAS uint32, md5 bool) {
	t.Helper()
	if !n.Established() || n.ConnectionsEstablished != 1 || n.ConnectionsDropped != 0 {
		t.Errorf("state: %v", n)
	}
	if n.RemoteAS != peerAS || n.Description != "to_b" || n.MD5 != md5 {
		t.Errorf("remote AS %d, description %q, MD5 %v; want %d, to_b, %v", n.RemoteAS, n.Description, n.MD5, peerAS, md5)
	}
	if n.HostLocal != addrA.String() || n.HostForeign != addrB.String() || n.Hostname != "frrtest-127-0-0-2" {
		t.Errorf("connection %s:%d - %s:%d, hostname %q", n.HostLocal, n.PortLocal, n.HostForeign, n.PortForeign, n.Hostname)
	}
	if n.EstablishedAt.IsZero() || time.Since(n.EstablishedAt) > testDeadline {
		t.Errorf("EstablishedAt = %v", n.EstablishedAt)
	}
}

// TestMD5Mismatch proves the MD5 key is really applied on loopback: with
// different keys the kernel drops the segments and no session comes up.
func TestMD5Mismatch(t *testing.T) {
	Require(t)
	ca, cb := pair(t, 65001, 65002, "key-one", false)
	cb.Neighbors[0].Password = "key-two"
	a, b := Start(t, ca), Start(t, cb)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	if n, err := a.WaitEstablished(ctx, addrB); err == nil {
		t.Fatalf("established with mismatched MD5 keys: %v", n)
	}
	if n, err := b.Neighbor(addrA); err != nil || n.Established() || n.ConnectionsEstablished != 0 {
		t.Fatalf("B: %v (%v), want never established", n, err)
	}
}

// TestReconfigure shows the "no reset" evidence: an identical config (and
// the same password set again by hand) keeps ConnectionsEstablished; a
// password rotation on both sides adds exactly one.
func TestReconfigure(t *testing.T) {
	Require(t)
	ctx := withDeadline(t)
	ca, cb := pair(t, 65001, 65002, "old-key", false)
	a, b := Start(t, ca), Start(t, cb)
	before, _ := establish(t, ctx, a, b)

	t.Run("identical-config-keeps-session", func(t *testing.T) {
		reconfigure(t, a, ca)
		reconfigure(t, b, cb)
		mustExec(t, a, "configure terminal", "router bgp 65001", "neighbor 127.0.0.2 password old-key")
		stillSame(t, a, before)
	})
	t.Run("password-rotation-re-establishes-once", func(t *testing.T) {
		const key = `new-key!#?"'\`
		ca.Neighbors[0].Password, cb.Neighbors[0].Password = key, key
		reconfigure(t, a, ca)
		reconfigure(t, b, cb)
		after, err := a.WaitNeighbor(ctx, addrB, func(n NeighborState) bool {
			return n.Established() && n.ConnectionsEstablished > before.ConnectionsEstablished
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("A after the rotation: %v", after)
		if after.ConnectionsEstablished != before.ConnectionsEstablished+1 || after.SameSessionAs(before) {
			t.Fatalf("rotation: before %v, after %v; want exactly one new session", before, after)
		}
		stillSame(t, a, after)
		if got := b.Establishments(addrA); got != 2 {
			t.Errorf("B establishments = %d, want 2", got)
		}
		if run := mustExec(t, a, "show running-config"); !strings.Contains(run, "password "+key+"\n") {
			t.Errorf("running config lacks the key verbatim:\n%s", run)
		}
		if !strings.Contains(readFile(t, a.ConfigPath()), "password "+key+"\n") {
			t.Errorf("bgpd.conf not rewritten")
		}
	})
}

// stillSame waits long enough for a reset to show (keepalive 3 s, connect
// retry 1 s) and checks the session is the one in before.
func stillSame(t *testing.T, f *FRR, before NeighborState) {
	t.Helper()
	time.Sleep(1500 * time.Millisecond)
	now, err := f.Neighbor(addrB)
	if err != nil {
		t.Fatal(err)
	}
	if !now.SameSessionAs(before) {
		t.Fatalf("session changed: before %v, now %v", before, now)
	}
}

func reconfigure(t *testing.T, f *FRR, cfg Config) {
	t.Helper()
	if err := f.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	}
}

func mustExec(t *testing.T, f *FRR, cmds ...string) string {
	t.Helper()
	out, err := f.Exec(cmds...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
