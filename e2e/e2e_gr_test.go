//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/peeragent/peeragent/internal/testrig/bird"
	"github.com/peeragent/peeragent/state"
)

// The session-loss rig (docs/routes.md appendix A scenario 35, §9.5 rule
// 2): two network namespaces of the test's own joined by a veth pair, the
// agent (--dataplane linux) in A, BIRD 2 in B as an external peer (AS
// 65001) announcing a /24 outside every pool, which the agent installs as
// a kernel route via BIRD. The observable is the kernel: every route
// message of the agent's protocol in A, read through rtnetlink.

const (
	grAddrA  = "192.168.78.1" // node-a, the agent
	grAddrB  = "192.168.78.2" // BIRD
	grPrefix = "198.51.100.0/24"
	grBirdAS = 65001
	// grRestart is the restart time BIRD advertises: how long the agent's
	// speaker keeps BIRD's routes once the session breaks (GoBGP v4.8.0
	// arms its timer with the peer's advertised time, pkg/server/fsm.go
	// L701, L2074). Short, so that the test is, and yet well above the
	// 5 s a neighbor stays Idle after a session loss (GoBGP's holdtimeIdle,
	// fsm.go L150, L868), after which a restarted BIRD is back at the
	// earliest.
	grRestart = 10 * time.Second
	// grAgentRestart is the restart time the agent advertises: its
	// neighbor's maxRestartTime, Calico's default (docs/semantics.md §3).
	grAgentRestart = "120"
	grProtocol     = "agent" // BIRD's protocol name for the session
	grPeerFile     = "bgppeer-bird.yaml"
)

var grNodes = nodeYAML("node-a", `projectcalico.org/IPv4Address: 192.168.78.1/24`)

const grBGP = `apiVersion: crd.projectcalico.org/v1
kind: BGPConfiguration
metadata: {name: default}
spec: {nodeToNodeMeshEnabled: false, listenPort: 179}
`

var grPeer = fmt.Sprintf(`apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: bird}
spec: {node: node-a, peerIP: %s, asNumber: %d}
`, grAddrB, grBirdAS)

// TestBirdSessionLossKeepsRouteForRestartTime: scenario 35 with graceful
// restart negotiated. BIRD is killed (SIGKILL: the session ends as a read
// failure, a graceful cause); the agent's kernel route stays, untouched,
// for BIRD's restart time, and goes when that time ends without a new
// session.
func TestBirdSessionLossKeepsRouteForRestartTime(t *testing.T) {
	r, b, w := startGR(t, "on")

	t0 := killBird(t, b)
	down := r.waitSessionDown(t)
	if rt, ok := kernelRoute(t, r.h, grPrefix); !ok || rt.Gw.String() != grAddrB {
		t.Fatalf("the route to %s went with the session (kernel: %v), want it kept for the restart time", grPrefix, rt)
	}
	r.checkTableRoute(t, true)
	ctx, cancel := context.WithDeadline(context.Background(), t0.Add(grRestart+20*time.Second))
	defer cancel()
	at, ok := w.waitFor(ctx, "RTM_DELROUTE", grPrefix)
	if !ok {
		t.Fatalf("the route to %s is still there 20 s after BIRD's restart time ended: %q", grPrefix, w.stop())
	}
	kept := at.Sub(t0)
	t.Logf("scenario 35, graceful restart: the agent saw the session down %v after the SIGKILL; route kept %v (restart time %v), removed %v after the restart time ended",
		down.Sub(t0).Round(time.Millisecond), kept.Round(time.Millisecond), grRestart, (kept - grRestart).Round(time.Millisecond))
	if kept < grRestart {
		t.Errorf("route removed %v after the SIGKILL, before BIRD's restart time (%v) ended", kept, grRestart)
	}
	if ev := w.stop(); len(ev) != 1 {
		t.Errorf("route messages in node-a's namespace: %q, want only the RTM_DELROUTE of %s", ev, grPrefix)
	}
	if rt, ok := kernelRoute(t, r.h, grPrefix); ok {
		t.Errorf("the kernel still has %s after its RTM_DELROUTE", rt)
	}
	r.checkTableRoute(t, false)
}

// TestBirdRestartWithinRestartTimeKeepsRoute: scenario 35's variant. BIRD
// is killed and started again at once, re-advertising the prefix: the
// route is neither removed nor replaced, through the new session and past
// the end of the restart time the first one would have run out at.
func TestBirdRestartWithinRestartTimeKeepsRoute(t *testing.T) {
	r, b, w := startGR(t, "on")

	t0 := killBird(t, b)
	down := r.waitSessionDown(t)
	b2 := r.startBird(t, "on")
	r.waitInstalled(t, b2, true)
	back := time.Since(t0)
	if back >= grRestart {
		t.Fatalf("the new session came %v after the SIGKILL, not within BIRD's restart time (%v)", back, grRestart)
	}
	if n := b2.Establishments(grProtocol); n != 1 {
		t.Errorf("the restarted BIRD established %d sessions, want 1", n)
	}
	// Watch on past the end of the restart time of the broken session: a
	// timer left running would remove the route then.
	ctx, cancel := context.WithDeadline(context.Background(), t0.Add(grRestart+2*time.Second))
	defer cancel()
	if at, changed := w.waitFor(ctx, "RTM_"); changed {
		t.Fatalf("a route message %v after the SIGKILL: %q", at.Sub(t0), w.stop())
	}
	if rt, ok := kernelRoute(t, r.h, grPrefix); !ok || rt.Gw.String() != grAddrB {
		t.Fatalf("the route to %s is gone from the kernel (%v) without a route message", grPrefix, rt)
	}
	r.checkTableRoute(t, true)
	ev := w.stop()
	t.Logf("scenario 35, restart within the restart time: session down %v after the SIGKILL, back %v after; route watched for %v: %d route messages",
		down.Sub(t0).Round(time.Millisecond), back.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond), len(ev))
	if len(ev) > 0 {
		t.Errorf("route messages in node-a's namespace across BIRD's restart, want none:\n%s", strings.Join(ev, "\n"))
	}
}

// TestBirdSessionLossWithoutGracefulRestart: scenario 35 without graceful
// restart (BIRD `graceful restart off`): the route goes as soon as the
// session does.
func TestBirdSessionLossWithoutGracefulRestart(t *testing.T) {
	r, b, w := startGR(t, "off")

	t0 := killBird(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	at, ok := w.waitFor(ctx, "RTM_DELROUTE", grPrefix)
	if !ok {
		t.Fatalf("the route to %s is still there 10 s after the session without graceful restart was lost: %q", grPrefix, w.stop())
	}
	t.Logf("scenario 35, no graceful restart: route removed %v after the SIGKILL", at.Sub(t0).Round(time.Millisecond))
	if ev := w.stop(); len(ev) != 1 {
		t.Errorf("route messages in node-a's namespace: %q, want only the RTM_DELROUTE of %s", ev, grPrefix)
	}
	r.checkTableRoute(t, false)
}

// TestBirdDeletePeerWithGracefulRestart: scenario 35's DeletePeer. With
// graceful restart negotiated, the BGPPeer leaves the agent's input; the
// agent deletes the neighbor (BIRD receives a Cease) and the route goes
// with it, not after the restart time.
func TestBirdDeletePeerWithGracefulRestart(t *testing.T) {
	r, b, w := startGR(t, "on")

	t0 := time.Now()
	if err := os.Remove(filepath.Join(r.dir, grPeerFile)); err != nil {
		t.Fatal(err)
	}
	// The manifest directory applies a removal once the file has been gone
	// for 2 s (docs/semantics.md §7); BIRD's side of the session ends when
	// the agent deletes the neighbor.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := b.WaitProtocol(ctx, grProtocol, func(p bird.ProtocolState) bool { return !p.Established() })
	if err != nil {
		t.Fatal(err)
	}
	at, ok := w.waitFor(ctx, "RTM_DELROUTE", grPrefix)
	if !ok {
		t.Fatalf("the route to %s is still there 20 s after its BGPPeer was deleted: %q", grPrefix, w.stop())
	}
	took := at.Sub(p.Since) // both wall clock: BIRD prints Since to the microsecond
	t.Logf("scenario 35, DeletePeer: BIRD's session ended %v after the file was removed (%s); route removed %v after that",
		p.Since.Sub(t0).Round(time.Millisecond), p, took.Round(10*time.Microsecond))
	if took >= grRestart {
		t.Errorf("route removed %v after the neighbor was deleted, as if kept for the restart time (%v)", took, grRestart)
	}
	if exited, _ := b.Exited(); exited {
		t.Error("BIRD exited: the session did not end by DeletePeer")
	}
	if ev := w.stop(); len(ev) != 1 {
		t.Errorf("route messages in node-a's namespace: %q, want only the RTM_DELROUTE of %s", ev, grPrefix)
	}
	r.checkTableRoute(t, false)
}

// grRig is one run of the rig: the namespaces, the agent's manifest
// directory, the agent, and a netlink handle in A.
type grRig struct {
	nsA, nsB string
	dir      string
	agent    *nsAgent
	h        *netlink.Handle
}

// startGR is the rig with BIRD started with graceful restart on or off,
// its route installed on node-a, and node-a's route messages watched.
func startGR(t *testing.T, gr string) (*grRig, *bird.Bird, *routeWatch) {
	t.Helper()
	r := newGRRig(t)
	b := r.startBird(t, gr)
	r.waitInstalled(t, b, gr == "on")
	return r, b, watchRoutes(t, r.nsA)
}

// killBird SIGKILLs BIRD and returns when.
func killBird(t *testing.T, b *bird.Bird) time.Time {
	t.Helper()
	t0 := time.Now()
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	return t0
}

func newGRRig(t *testing.T) *grRig {
	t.Helper()
	bird.Require(t)
	requireNetns(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := &grRig{dir: t.TempDir()}
	r.nsA, r.nsB = vethPair(t, ctx, "gr", "ga0", "gb0")
	for _, s := range []struct{ ns, dev, addr string }{{r.nsA, "ga0", grAddrA}, {r.nsB, "gb0", grAddrB}} {
		ipCmd(t, ctx, "-n", s.ns, "addr", "add", s.addr+"/24", "dev", s.dev)
		ipCmd(t, ctx, "-n", s.ns, "link", "set", s.dev, "up")
	}
	writeFile(t, r.dir, "nodes.yaml", grNodes)
	writeFile(t, r.dir, "bgp.yaml", grBGP)
	writeFile(t, r.dir, grPeerFile, grPeer)
	r.h = nsHandle(t, r.nsA)
	r.agent = startNSAgent(t, buildAgent(t), r.nsA, r.dir, "node-a", grAddrA)
	return r
}

// startBird runs BIRD in B with graceful restart mode ("on" with the
// restart time grRestart, or "off").
func (r *grRig) startBird(t *testing.T, mode string) *bird.Bird {
	t.Helper()
	n := bird.Neighbor{Name: grProtocol, Address: netip.MustParseAddr(grAddrA), Port: 179, AS: 64512, GracefulRestart: mode}
	if mode == "on" {
		n.GracefulRestartTime = int(grRestart / time.Second)
	}
	return bird.Start(t, bird.Config{
		Address: netip.MustParseAddr(grAddrB), Port: 179, AS: grBirdAS, Netns: r.nsB,
		Neighbors: []bird.Neighbor{n},
		Announce:  []netip.Prefix{netip.MustParsePrefix(grPrefix)},
	})
}

// waitInstalled waits until BIRD has sent the prefix on an Established
// session, and the agent has the session established, the prefix in its
// table via BIRD, applied, and in the kernel. It then checks what BIRD
// shows of graceful restart: the agent's capability always (its
// neighbor's maxRestartTime, IPv4), BIRD's own only when gr.
func (r *grRig) waitInstalled(t *testing.T, b *bird.Bird, gr bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := b.WaitProtocol(ctx, grProtocol, func(p bird.ProtocolState) bool {
		return p.Established() && p.Channels["ipv4"].Exported == 1
	})
	if err != nil {
		t.Fatal(err)
	}
	var d stateDump
	for {
		d, err = r.agent.fetch(ctx)
		if err == nil && d.bgp(grAddrB) == "established" && tableRouteVia(d, grAddrB) {
			if rt, ok := kernelRoute(t, r.h, grPrefix); ok && rt.Gw.String() == grAddrB {
				break
			}
		}
		select {
		case <-ctx.Done():
			js, _ := json.Marshal(d)
			t.Fatalf("node-a: no established session with BIRD and route %s via %s in the kernel (last error %v): %s", grPrefix, grAddrB, err, js)
		case <-time.After(50 * time.Millisecond):
		}
	}
	agentGR, birdGR := p.NeighborCaps["Graceful restart"], p.LocalCaps["Graceful restart"]
	t.Logf("BIRD's session with the agent: %s; graceful restart sent by the agent %v, by BIRD %v", p, agentGR, birdGR)
	if agentGR["Restart time"] != grAgentRestart || agentGR["AF supported"] != "ipv4" {
		t.Errorf("the agent's graceful restart capability as BIRD got it: %v, want restart time %s, AF supported ipv4", agentGR, grAgentRestart)
	}
	switch _, sent := p.LocalCaps["Graceful restart"]; {
	case gr && (birdGR["Restart time"] != fmt.Sprint(int(grRestart/time.Second)) || birdGR["AF supported"] != "ipv4"):
		t.Errorf("BIRD's graceful restart capability: %v, want restart time %v, AF supported ipv4", birdGR, grRestart)
	case !gr && sent:
		t.Errorf("BIRD sent a graceful restart capability (%v), want none", birdGR)
	}
}

// waitSessionDown waits until the agent's session with BIRD has left
// Established and returns when the test saw it.
func (r *grRig) waitSessionDown(t *testing.T) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		d, err := r.agent.fetch(ctx)
		if bgp := d.bgp(grAddrB); err == nil && bgp != "established" {
			return time.Now()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("node-a's session with BIRD still established 10 s after BIRD was killed (last error %v)", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// checkTableRoute checks the agent's table entry for the prefix: learned
// via BIRD and applied (want), or no route wanted (!want).
func (r *grRig) checkTableRoute(t *testing.T, want bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := r.agent.fetch(ctx)
	if err != nil {
		t.Fatalf("node-a /state: %v", err)
	}
	if got := tableRouteVia(d, grAddrB); got != want {
		js, _ := json.Marshal(d.Routes)
		t.Errorf("node-a's table routes %s via %s, applied: %v, want %v: %s", grPrefix, grAddrB, got, want, js)
	}
	if !want {
		for _, rt := range d.Routes {
			if rt.Prefix.String() == grPrefix && rt.Wanted() {
				t.Errorf("node-a's table still wants %s: %+v", grPrefix, rt)
			}
		}
	}
}

// tableRouteVia reports whether d's table routes grPrefix via nextHop
// only, learned, and applied.
func tableRouteVia(d stateDump, nextHop string) bool {
	for _, rt := range d.Routes {
		if rt.Prefix.String() == grPrefix {
			return rt.Origin == "learned" && len(rt.Via) == 1 && rt.Via[0].String() == nextHop &&
				rt.Phase == state.RoutePhaseApplied
		}
	}
	return false
}
