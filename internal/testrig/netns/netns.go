// Package netns gives a test a shared link of its own: two network
// namespaces joined by a veth pair, with IPv6 addresses on both ends,
// removed by a cleanup.
//
// # Contract
//
//   - Require(t) makes a test depend on root and iproute2's ip: without
//     them the test is skipped with a loud reason (also printed once on
//     stderr), or fails under CI=true.
//   - Pair(t, a, b) creates namespaces "peeragent-ll-a-RANDOM" and
//     "peeragent-ll-b-RANDOM", the veth pair inside the first with its
//     peer moved into the second at creation (nothing appears in the
//     test's own namespace, not even for a moment), brings lo and both
//     ends up, adds a and b to the two ends without duplicate address
//     detection (nodad: usable at once), and returns when the kernel's
//     automatic fe80:: link-local address of each end has finished its
//     own duplicate address detection (no longer tentative), within 10 s.
//     A cleanup deletes both namespaces, which removes the veth pair and
//     ends every socket left in them; processes the test started in a
//     namespace must be stopped by their own cleanups (registered later,
//     so they run first).
//   - Do(ns, f) runs f with its thread in a namespace, so the sockets f
//     opens (a listener, a client's dial, a raw socket) live there;
//     Listen(ns, network, address) is net.Listen that way.
//   - CaptureTCP(t, ns, dev, from) records what an address sends over TCP
//     on a device, per connection, reassembled from the SYN on, through a
//     packet socket: the bytes on the wire, before any peer parses them
//     (for example the BGP UPDATEs a peer really sent). Start it before
//     the connections; a cleanup stops it.
package netns

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/peeragent/peeragent/internal/testrig/daemon"
)

// readyTimeout bounds the wait for the link-local addresses.
const readyTimeout = 10 * time.Second

var dependency = daemon.Dependency{
	What:  "network namespace (root and iproute2's ip)",
	Tests: "shared-link tests (network namespaces)",
}

// Require makes the test depend on creating network namespaces: root and
// iproute2's ip.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		dependency.Missing(t, "!!! NOT ROOT: the test creates network namespaces.")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		dependency.Missing(t, "!!! NO ip (iproute2): the test needs it to create network namespaces.")
	}
}

// End is one end of the shared link.
type End struct {
	// NS is the namespace's name (ip netns, /var/run/netns/NS).
	NS string
	// Dev is the veth interface in it.
	Dev string
	// Addr is the address given to Dev, with its prefix length.
	Addr netip.Prefix
	// LinkLocal is the kernel's fe80:: address of Dev.
	LinkLocal netip.Addr
}

// Pair makes two namespaces joined by a veth pair, a on the first end and
// b on the second (see the package contract). Both addresses must be IPv6
// or both IPv4 (an IPv4 pair gets the IPv6 link-local addresses as well).
func Pair(t testing.TB, a, b netip.Prefix) (End, End) {
	t.Helper()
	Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	suffix := fmt.Sprintf("%06x", rand.Uint32()&0xffffff)
	ea := End{NS: "peeragent-ll-a-" + suffix, Dev: "lla0", Addr: a}
	eb := End{NS: "peeragent-ll-b-" + suffix, Dev: "llb0", Addr: b}
	for _, ns := range []string{ea.NS, eb.NS} {
		ip(t, ctx, "netns", "add", ns)
		t.Cleanup(func() {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				t.Errorf("netns: ip netns del %s: %v\n%s", ns, err, out)
			}
		})
	}
	ip(t, ctx, "-n", ea.NS, "link", "add", ea.Dev, "type", "veth", "peer", "name", eb.Dev, "netns", eb.NS)
	for _, e := range []*End{&ea, &eb} {
		ip(t, ctx, "-n", e.NS, "link", "set", "lo", "up")
		args := []string{"-n", e.NS, "addr", "add", e.Addr.String(), "dev", e.Dev}
		if e.Addr.Addr().Is6() {
			args = append(args, "nodad")
		}
		ip(t, ctx, args...)
		ip(t, ctx, "-n", e.NS, "link", "set", e.Dev, "up")
	}
	for _, e := range []*End{&ea, &eb} {
		ll, err := waitLinkLocal(ctx, e.NS, e.Dev)
		if err != nil {
			t.Fatalf("netns: %s %s: %v", e.NS, e.Dev, err)
		}
		e.LinkLocal = ll
	}
	return ea, eb
}

func ip(t testing.TB, ctx context.Context, args ...string) {
	t.Helper()
	if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("netns: ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// waitLinkLocal polls dev in ns until it has an fe80:: address that is
// not tentative, and returns it.
func waitLinkLocal(ctx context.Context, ns, dev string) (netip.Addr, error) {
	h, err := Handle(ns)
	if err != nil {
		return netip.Addr{}, err
	}
	defer h.Close()
	link, err := h.LinkByName(dev)
	if err != nil {
		return netip.Addr{}, err
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last []netlink.Addr
	for {
		last, err = h.AddrList(link, netlink.FAMILY_V6)
		if err != nil {
			return netip.Addr{}, err
		}
		if ll, ok := linkLocal(last); ok {
			return ll, nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return netip.Addr{}, fmt.Errorf("no usable link-local address within %v: %v", readyTimeout, last)
		}
	}
}

// linkLocal is the first fe80:: address of addrs that has finished
// duplicate address detection.
func linkLocal(addrs []netlink.Addr) (netip.Addr, bool) {
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok || !ip.Unmap().IsLinkLocalUnicast() || a.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) != 0 {
			continue
		}
		return ip.Unmap(), true
	}
	return netip.Addr{}, false
}

// Handle is a netlink handle in the named namespace; the caller closes it.
func Handle(ns string) (*netlink.Handle, error) {
	h, err := vnetns.GetFromName(ns)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return netlink.NewHandleAt(h)
}

// Do runs f on a thread switched into the named namespace: sockets f opens
// stay in that namespace. The thread goes back before it is released; if
// it cannot, it stays locked and ends with its goroutine.
func Do(ns string, f func() error) error {
	runtime.LockOSThread()
	orig, err := vnetns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	target, err := vnetns.GetFromName(ns)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer target.Close()
	if err := vnetns.Set(target); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	ferr := f()
	if err := vnetns.Set(orig); err != nil {
		return fmt.Errorf("back from namespace %s: %w", ns, err)
	}
	runtime.UnlockOSThread()
	return ferr
}

// Listen is net.Listen inside the named namespace: the listener stays in
// it after the call returns.
func Listen(ns, network, address string) (net.Listener, error) {
	var l net.Listener
	err := Do(ns, func() (err error) {
		l, err = net.Listen(network, address)
		return err
	})
	return l, err
}
