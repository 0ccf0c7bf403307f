package linux

import (
	"context"
	"net/netip"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/peeragent/peeragent/state"
)

// inNS runs fn on a thread in ns: what the executor's calls see as the
// caller's network namespace (New(nil), netlink's package functions).
func inNS(tb testing.TB, ns netns.NsHandle, fn func()) {
	tb.Helper()
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		tb.Fatalf("the current namespace: %v", err)
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		runtime.UnlockOSThread()
		tb.Fatalf("into the test's namespace: %v", err)
	}
	defer func() {
		if err := netns.Set(orig); err != nil {
			// The thread stays locked and ends with the goroutine.
			tb.Errorf("back from the test's namespace: %v", err)
			return
		}
		runtime.UnlockOSThread()
	}()
	fn()
}

// BenchmarkReplaceHandle: the executor's Replace of an owned route (one
// RTM_NEWROUTE and its answer), cycling over 64 /32 routes via a next hop
// on dp0, through a handle of netlink's package functions (per-call: a
// socket made, bound, registered with the poller and closed for each
// call) and through the one New(nil) makes (kept: one socket for every
// call), on a thread in a namespace of its own. Reported per call, with
// the process's CPU time per call (cpu-ns/op).
func BenchmarkReplaceHandle(b *testing.B) {
	for _, tt := range []struct {
		name string
		h    *netlink.Handle
	}{{"per-call", &netlink.Handle{}}, {"kept", nil}} {
		b.Run(tt.name, func(b *testing.B) {
			n := newNS(b)
			inNS(b, n.ns, func() {
				e := New(tt.h, Options{})
				defer e.Close()
				routes := make([]state.Route, 64)
				for i := range routes {
					routes[i] = state.Route{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, 0, byte(i)}), 32),
						Via: []netip.Addr{netip.MustParseAddr("10.0.0.2")}}
				}
				ctx := context.Background()
				for _, r := range routes { // owned from here on: one call each
					if err := e.Replace(ctx, r); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := processCPU()
				for i := range b.N {
					if err := e.Replace(ctx, routes[i%len(routes)]); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			})
		})
	}
}

// TestKeptHandle: New(nil) keeps one socket in the namespace of the
// thread that called it, whatever thread calls later (here one in a
// second namespace, which stays untouched), and that socket serves the
// calls after one the kernel refused: a route via a next hop not on-link,
// then an install, a listing, a change and a deletion.
func TestKeptHandle(t *testing.T) {
	n := newNS(t)
	other := makeNS(t)
	var e *Executor
	inNS(t, n.ns, func() { e = New(nil, Options{}) })
	defer e.Close()
	if !e.own {
		t.Fatal("New(nil) made no handle of its own (no socket in the namespace)")
	}
	ctx := context.Background()
	inNS(t, other, func() {
		if err := e.Replace(ctx, route("10.244.9.0/26 via 10.9.9.9")); err == nil {
			t.Error("Replace via a next hop not on-link succeeded")
		}
		for _, r := range []string{"10.244.2.0/26 via 10.0.0.2", "fd10:2::/80 via fd00::2", "10.244.2.0/26 drop"} {
			if err := e.Replace(ctx, state.NormalRoute(route(r))); err != nil {
				t.Fatalf("Replace %s: %v", r, err)
			}
		}
	})
	if got := heldAt(t, n, "10.244.2.0/26"); len(got) != 1 || got[0] != "proto 201 metric 1024 table 254 blackhole" {
		t.Errorf("the namespace of New holds %q at 10.244.2.0/26, want the drop route", got)
	}
	own, err := e.ListOwn(ctx)
	if err != nil || len(own) != 2 {
		t.Fatalf("ListOwn: %v, %v: want two routes", own, err)
	}
	if err := e.Delete(ctx, netip.MustParsePrefix("10.244.2.0/26")); err != nil {
		t.Fatal(err)
	}
	if got := heldAt(t, n, "10.244.2.0/26"); len(got) != 0 {
		t.Errorf("after Delete the namespace holds %q", got)
	}
	h, err := netlink.NewHandleAt(other)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if rs, err := h.RouteList(nil, netlink.FAMILY_ALL); err != nil || len(rs) != 0 {
		t.Errorf("the calling thread's namespace holds %v (%v): the calls went there", rs, err)
	}
}
