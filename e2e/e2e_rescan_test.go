package e2e

import (
	"context"
	"testing"
	"time"
)

// TestRescanRepairsKernelRoutes: docs/routes.md §9.7 rule 6 with the real
// agent and kernel, in a network namespace of the test's own. node-a has
// its block's blackhole; someone deletes it behind the agent's back: the
// next rescan puts it back. Someone adds a route under the agent's
// protocol and metric: the next rescan removes it. Both count as repairs.
func TestRescanRepairsKernelRoutes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := nodeNS(t, ctx, "r")
	dir := pingManifests(t, false)
	// node-b never answers: the routes settle at --route-settle-max.
	a := startNSAgent(t, buildAgent(t), ns, dir, "node-a", pingAddrA, "--route-settle-max", "1s", "--route-rescan", "500ms")
	h := nsHandle(t, ns)

	waitSettled := func(what string, cond func(stateDump) bool) stateDump {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			d, err := a.fetch(ctx)
			if err == nil && cond(d) {
				return d
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30 s (last /state: %+v, %v)\n%s", what, d.Routing, err, a.logs())
			}
			select {
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	waitSettled("the blackhole applied and the routes settled", func(d stateDump) bool {
		_, ok := kernelRoute(t, h, pingBlkA)
		return ok && d.Routing.Settled
	})

	w := watchRoutes(t, ns)
	t0 := time.Now()
	ipCmd(t, ctx, "-n", ns, "route", "del", "blackhole", pingBlkA, "proto", "201", "metric", "1024")
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if _, ok := w.waitFor(wctx, "RTM_DELROUTE", pingBlkA); !ok {
		t.Fatalf("the deletion by hand was not seen: %q", w.stop())
	}
	at, ok := w.waitFor(wctx, "RTM_NEWROUTE", pingBlkA)
	if !ok {
		t.Fatalf("the blackhole of %s was not put back: %q\n%s", pingBlkA, w.stop(), a.logs())
	}
	t.Logf("blackhole %s deleted by hand, put back %v later", pingBlkA, at.Sub(t0).Round(time.Millisecond))

	const stray = "10.99.0.0/24"
	t1 := time.Now()
	ipCmd(t, ctx, "-n", ns, "route", "add", stray, "via", pingAddrB, "proto", "201", "metric", "1024")
	at, ok = w.waitFor(wctx, "RTM_DELROUTE", stray)
	if !ok {
		t.Fatalf("the route %s added by hand under protocol 201 was not removed: %q\n%s", stray, w.stop(), a.logs())
	}
	t.Logf("route %s added by hand under protocol 201, removed %v later", stray, at.Sub(t1).Round(time.Millisecond))
	d := waitSettled("two repairs counted", func(d stateDump) bool { return d.Routing.Repairs >= 2 })
	if d.Routing.Repairs != 2 {
		t.Errorf("repairs %d, want 2", d.Routing.Repairs)
	}
	if _, ok := kernelRoute(t, h, pingBlkA); !ok {
		t.Errorf("the blackhole of %s is gone again", pingBlkA)
	}
	if ev := w.stop(); len(ev) != 4 {
		t.Errorf("route messages: %q, want the deletion by hand, the re-add, the addition by hand and its removal", ev)
	}
}

// nodeNS makes a network namespace of the test's own (deleted at cleanup)
// in which node-a has its address pingAddrA on a link that is up.
func nodeNS(t *testing.T, ctx context.Context, tag string) string {
	t.Helper()
	requireNetns(t)
	ns := newNS(t, ctx, "peeragent-t-"+tag+"-"+nsSuffix())
	// A veth pair with both ends inside the namespace (the dummy module
	// may be missing) gives node-a its address on a link that is up.
	ipCmd(t, ctx, "-n", ns, "link", "add", "ra0", "type", "veth", "peer", "name", "rb0")
	ipCmd(t, ctx, "-n", ns, "addr", "add", pingAddrA+"/24", "dev", "ra0")
	ipCmd(t, ctx, "-n", ns, "link", "set", "rb0", "up")
	ipCmd(t, ctx, "-n", ns, "link", "set", "ra0", "up")
	return ns
}
