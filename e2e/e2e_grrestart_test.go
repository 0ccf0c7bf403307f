//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/peeragent/peeragent/internal/testrig/bird"
)

// The agent's own restart as its peer sees it (docs/routes.md §9.6 rule
// 7): the session-loss rig of e2e_gr_test.go, with an own block for the
// agent to advertise and BIRD logging every route it adds and removes.

const grBlock = "10.244.1.0/26"

var grIPAM = defaultPoolYAML + affinityYAML("node-a-10-244-1-0-26", grBlock)

// TestBirdSeesNoAgentRestart: the agent is killed (SIGKILL), started
// again, stopped (SIGTERM, the graceful shutdown) and started again.
// Each new session's OPEN carries the restart state bit and IPv4 as a
// family whose forwarding state was preserved (BIRD's "AF preserved"),
// BIRD keeps the agent's block stale across each restart and takes the
// re-announcement as a refresh: its log shows no "removed" for the block,
// and its import withdraw counters stay at 0.
func TestBirdSeesNoAgentRestart(t *testing.T) {
	r := newGRRig(t)
	writeFile(t, r.dir, "ipam.yaml", grIPAM)
	n := bird.Neighbor{Name: grProtocol, Address: netip.MustParseAddr(grAddrA), Port: 179, AS: 64512,
		GracefulRestart: "on", GracefulRestartTime: int(grRestart / time.Second), Extra: []string{"debug all"}}
	b := bird.Start(t, bird.Config{
		Address: netip.MustParseAddr(grAddrB), Port: 179, AS: grBirdAS, Netns: r.nsB,
		Neighbors: []bird.Neighbor{n},
		Announce:  []netip.Prefix{netip.MustParsePrefix(grPrefix)},
	})
	first := r.waitBlock(t, b, false)
	bin := buildAgent(t)
	for _, sig := range []os.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		if err := r.agent.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		_ = r.agent.cmd.Wait()
		r.agent = startNSAgent(t, bin, r.nsA, r.dir, "node-a", grAddrA)
		p := r.waitBlock(t, b, true)
		if p.SameSessionAs(first) {
			t.Fatalf("after %v: BIRD's session with the agent is the first one: %s", sig, p)
		}
		gr := p.NeighborCaps["Graceful restart"]
		t.Logf("after %v: BIRD's session %s; the agent's graceful restart capability: %v", sig, p, gr)
		if gr["AF preserved"] != "ipv4" {
			t.Errorf("after %v: the agent's graceful restart capability as BIRD got it: %v, want AF preserved ipv4", sig, gr)
		}
		ch := p.Channels["ipv4"]
		if ch.ImportWithdraws.Received != 0 || ch.ImportWithdraws.Accepted != 0 {
			t.Errorf("after %v: BIRD's import withdraws %+v, want 0", sig, ch.ImportWithdraws)
		}
	}
	var seen []string
	for _, line := range strings.Split(b.Log(), "\n") {
		if !strings.Contains(line, "<TRACE>") || !strings.Contains(line, grBlock) {
			continue // BIRD's route lines only
		}
		seen = append(seen, line)
		if strings.Contains(line, "removed") {
			t.Errorf("BIRD removed the agent's block: %s", line)
		}
	}
	// BIRD logs each route it takes ("debug all"): without those lines
	// the check above would prove nothing.
	if len(seen) == 0 {
		t.Errorf("BIRD's log has no line for %s: route debugging is off", grBlock)
	}
	t.Logf("BIRD's log lines for %s:\n%s", grBlock, strings.Join(seen, "\n"))
}

// waitBlock waits until BIRD has the agent's block imported on an
// Established session and, when restarted, its graceful restart over
// ("graceful restart done" logged, no stale route left), and the agent is
// settled. It returns BIRD's view of the session.
func (r *grRig) waitBlock(t *testing.T, b *bird.Bird, restarted bool) bird.ProtocolState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var p bird.ProtocolState
	var d stateDump
	var err error
	for {
		p, err = b.Protocol(grProtocol)
		if err == nil && p.Established() && p.Channels["ipv4"].Imported == 1 {
			d, err = r.agent.fetch(ctx)
			if err == nil && d.Routing.Settled && d.bgp(grAddrB) == "established" &&
				(!restarted || strings.Count(b.Log(), "graceful restart done") >= grDoneCount(b)) {
				return p
			}
		}
		select {
		case <-ctx.Done():
			js, _ := json.Marshal(d)
			t.Fatalf("BIRD has no fresh %s from the agent on an Established session (%s, error %v); agent: %s\nBIRD log:\n%s",
				grBlock, p, err, js, b.Log())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// grDoneCount is how many graceful restarts BIRD has begun for the agent
// ("Neighbor graceful restart detected"): each must be done.
func grDoneCount(b *bird.Bird) int {
	return strings.Count(b.Log(), "graceful restart detected")
}

// TestBirdGracefulRestartStateDiesWithSession: docs/routes.md §9.5 rule 3.
// BIRD with graceful restart on (restart time 10 s) is stopped and started
// again with it off; the new session has no capability. When that BIRD is
// killed, the agent's route via it goes at once, as for a peer that never
// offered graceful restart, not after the first session's restart time
// (GoBGP v4.8.0 keeps that session's state: pkg/server/fsm.go L696-711).
func TestBirdGracefulRestartStateDiesWithSession(t *testing.T) {
	r := newGRRig(t)
	b := r.startBird(t, "on")
	r.waitInstalled(t, b, true)
	b.Stop()
	stopped := time.Now()
	b = r.startBird(t, "off")
	r.waitInstalled(t, b, false)
	// Past the first session's restart time: nothing of it is pending.
	time.Sleep(time.Until(stopped.Add(grRestart + time.Second)))
	r.waitInstalled(t, b, false)
	w := watchRoutes(t, r.nsA)
	t0 := time.Now()
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), grRestart+5*time.Second)
	defer cancel()
	at, ok := w.waitFor(ctx, "RTM_DELROUTE", grPrefix)
	if !ok {
		t.Fatalf("the route to %s is still there %v after the session without graceful restart was lost: %q", grPrefix, grRestart+5*time.Second, w.stop())
	}
	took := at.Sub(t0)
	t.Logf("graceful restart turned off, then the session lost: route removed %v after the SIGKILL", took.Round(time.Millisecond))
	if took > 3*time.Second {
		t.Errorf("route removed %v after the SIGKILL, want at once (BIRD's former restart time is %v)", took, grRestart)
	}
	if ev := w.stop(); len(ev) != 1 {
		t.Errorf("route messages in node-a's namespace: %q, want only the RTM_DELROUTE of %s", ev, grPrefix)
	}
	r.checkTableRoute(t, false)
}
