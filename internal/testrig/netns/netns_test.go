package netns

import (
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func TestLinkLocal(t *testing.T) {
	addr := func(s string, flags int) netlink.Addr {
		return netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(s), Mask: net.CIDRMask(64, 128)}, Flags: flags}
	}
	tests := []struct {
		name  string
		addrs []netlink.Addr
		want  string // empty: none
	}{
		{name: "none"},
		{name: "global-only", addrs: []netlink.Addr{addr("fd00:37::1", unix.IFA_F_NODAD)}},
		{name: "tentative", addrs: []netlink.Addr{addr("fe80::1", unix.IFA_F_TENTATIVE)}},
		{name: "dad-failed", addrs: []netlink.Addr{addr("fe80::1", unix.IFA_F_DADFAILED)}},
		{name: "usable-after-global", addrs: []netlink.Addr{addr("fd00:37::1", unix.IFA_F_NODAD), addr("fe80::2", unix.IFA_F_PERMANENT)},
			want: "fe80::2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := linkLocal(tc.addrs)
			if tc.want == "" && ok || tc.want != "" && (!ok || got != netip.MustParseAddr(tc.want)) {
				t.Errorf("linkLocal = %v, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

// TestPair: a TCP connection from the first namespace reaches a listener
// in the second over its global address and over its link-local one (with
// the zone of the first end's device), and the namespaces go with the test.
func TestPair(t *testing.T) {
	var names []string
	t.Run("pair", func(t *testing.T) {
		a, b := Pair(t, netip.MustParsePrefix("fd00:37::1/64"), netip.MustParsePrefix("fd00:37::2/64"))
		names = []string{a.NS, b.NS}
		if !a.LinkLocal.IsLinkLocalUnicast() || !b.LinkLocal.IsLinkLocalUnicast() || a.LinkLocal == b.LinkLocal {
			t.Fatalf("link-local addresses %v and %v", a.LinkLocal, b.LinkLocal)
		}
		l, err := Listen(b.NS, "tcp", "[::]:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		port := uint16(l.Addr().(*net.TCPAddr).Port)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		for _, to := range []netip.Addr{b.Addr.Addr(), b.LinkLocal.WithZone(a.Dev)} {
			err := Do(a.NS, func() error {
				c, err := net.DialTimeout("tcp", netip.AddrPortFrom(to, port).String(), 5*time.Second)
				if err == nil {
					c.Close()
				}
				return err
			})
			if err != nil {
				t.Errorf("%s -> %s: %v", a.NS, to, err)
			}
		}
		// Outside the namespaces neither address exists.
		if c, err := net.DialTimeout("tcp", netip.AddrPortFrom(b.Addr.Addr(), port).String(), 200*time.Millisecond); err == nil {
			c.Close()
			t.Errorf("%v reachable from the test's own namespace", b.Addr.Addr())
		}
		t.Logf("%s %s %v %v <-> %s %s %v %v", a.NS, a.Dev, a.Addr, a.LinkLocal, b.NS, b.Dev, b.Addr, b.LinkLocal)
	})
	if len(names) == 0 {
		return // skipped or failed before the namespaces existed
	}
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range names {
		if slices.Contains(strings.Fields(string(out)), ns) {
			t.Errorf("namespace %s left after the test: %s", ns, out)
		}
	}
}
