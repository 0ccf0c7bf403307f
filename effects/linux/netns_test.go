package linux

import (
	"errors"
	"net"
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// needRoot skips loudly without root, and fails under CI=true, as the
// peer rigs do (internal/testrig/daemon): CI cannot pass without the
// kernel tests running.
func needRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 && why == "" {
		return
	}
	if why == "" {
		why = "not root"
	}
	msg := "!!! NO NETWORK NAMESPACE (" + why + "): the Linux dataplane tests need root to create one."
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s Under CI=true a missing network namespace is a failure, not a skip.", msg)
	}
	t.Skip(msg)
}

// testNS is a network namespace the test made, with a dummy interface
// dp0 (10.0.0.1/24, fd00::1/64) up; it goes when the test ends, even on
// failure.
type testNS struct {
	h    *netlink.Handle
	ns   netns.NsHandle
	link netlink.Link
}

func newNS(t testing.TB) *testNS {
	t.Helper()
	needRoot(t, "")
	ns := makeNS(t)
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatalf("netlink handle in the namespace: %v", err)
	}
	t.Cleanup(h.Close)
	n := &testNS{h: h, ns: ns}
	n.link = n.addLink(t)
	for _, a := range []string{"10.0.0.1/24", "fd00::1/64"} {
		ip, ipn, _ := net.ParseCIDR(a)
		ipn.IP = ip
		if err := h.AddrAdd(n.link, &netlink.Addr{IPNet: ipn, Flags: unix.IFA_F_NODAD}); err != nil {
			t.Fatalf("address %s: %v", a, err)
		}
	}
	return n
}

// makeNS creates an anonymous namespace on a locked thread and returns
// that thread to the test's namespace; closing the handle (at cleanup,
// after the netlink handle) removes the namespace.
func makeNS(t testing.TB) netns.NsHandle {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		needRoot(t, "cannot read the current namespace: "+err.Error())
	}
	defer orig.Close()
	ns, err := netns.New()
	if err != nil {
		runtime.UnlockOSThread()
		needRoot(t, "netns.New: "+err.Error())
	}
	if err := netns.Set(orig); err != nil {
		ns.Close()
		// The thread stays locked, so it ends with the test goroutine
		// instead of running other code in the test namespace.
		t.Fatalf("back to the test's namespace: %v", err)
	}
	runtime.UnlockOSThread()
	t.Cleanup(func() { ns.Close() })
	return ns
}

// addLink makes dp0, a dummy interface, or a veth pair's end where the
// dummy module is missing.
func (n *testNS) addLink(t testing.TB) netlink.Link {
	t.Helper()
	attrs := netlink.LinkAttrs{Name: "dp0"}
	err := n.h.LinkAdd(&netlink.Dummy{LinkAttrs: attrs})
	if err != nil {
		err = n.h.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "dp0-peer"})
		if err == nil {
			if peer, perr := n.h.LinkByName("dp0-peer"); perr == nil {
				err = n.h.LinkSetUp(peer)
			}
		}
	}
	if err != nil {
		t.Fatalf("make dp0 (dummy or veth): %v", err)
	}
	link, err := n.h.LinkByName("dp0")
	if err == nil {
		err = n.h.LinkSetUp(link)
	}
	if err != nil {
		t.Fatalf("dp0 up: %v", err)
	}
	return link
}

// routesAt lists what the kernel holds at prefix in the main table, of
// every protocol.
func (n *testNS) routesAt(t *testing.T, prefix string) []netlink.Route {
	t.Helper()
	_, dst, err := net.ParseCIDR(prefix)
	if err != nil {
		t.Fatal(err)
	}
	family := netlink.FAMILY_V4
	if dst.IP.To4() == nil {
		family = netlink.FAMILY_V6
	}
	filter := &netlink.Route{Table: unix.RT_TABLE_MAIN, Dst: dst}
	mask := netlink.RT_FILTER_TABLE | netlink.RT_FILTER_DST
	if ones, _ := dst.Mask.Size(); ones == 0 {
		filter.Dst, mask = nil, netlink.RT_FILTER_TABLE
	}
	for {
		rs, err := n.h.RouteListFiltered(family, filter, mask)
		if errors.Is(err, netlink.ErrDumpInterrupted) {
			continue
		}
		if err != nil {
			t.Fatalf("list %s: %v", prefix, err)
		}
		if mask&netlink.RT_FILTER_DST == 0 { // the default route only
			var out []netlink.Route
			for _, r := range rs {
				if ones, _ := dstOf(r).Mask.Size(); r.Dst == nil || ones == 0 {
					out = append(out, r)
				}
			}
			return out
		}
		return rs
	}
}

func dstOf(r netlink.Route) *net.IPNet {
	if r.Dst == nil {
		return &net.IPNet{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}
	}
	return r.Dst
}
