//go:build linux

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/state"
)

// TestMeshRestartRecreates: a graceful session loss in the node-to-node
// mesh (docs/routes.md §9.5 rule 2), with the ping rig's two agents.
// node-b, the side that dials (Calico's passivity: node-a's peer address
// sorts higher, so node-a is passive), is killed (SIGKILL) and started
// again, twice. The survivor, node-a, configures node-b anew at once
// (its session's recreate is bumped) and keeps node-b's path itself:
//   - node-a accepts the restarted node-b's connection: its log has no
//     `Closed an accepted connection` (GoBGP's Idle hold of 5 s, refusing
//     connections, is what the new FSM does not have);
//   - node-a's kernel route to node-b's block is never deleted nor
//     replaced: no route message at all in node-a's namespace;
//   - the stale record ends with node-b's End-of-RIB (routing.stale empty
//     once settled).
//
// Wall-clock times are logged, not asserted.
func TestMeshRestartRecreates(t *testing.T) {
	requireNetns(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	nsA, nsB := vethPair(t, ctx, "mr", "ma0", "mb0")
	for _, s := range []struct{ ns, dev, addr string }{{nsA, "ma0", pingAddrA}, {nsB, "mb0", pingAddrB}} {
		ipCmd(t, ctx, "-n", s.ns, "addr", "add", s.addr+"/24", "dev", s.dev)
		ipCmd(t, ctx, "-n", s.ns, "link", "set", s.dev, "up")
	}
	dirA, dirB := t.TempDir(), t.TempDir()
	for _, dir := range []string{dirA, dirB} {
		writeFile(t, dir, "nodes.yaml", pingNodes)
		writeFile(t, dir, "bgp.yaml", pingBGP)
		writeFile(t, dir, "pool.yaml", pingPool)
		writeFile(t, dir, "affinity-a.yaml", pingAffinityA)
		writeFile(t, dir, "affinity-b.yaml", pingAffinityB)
	}
	bin := buildAgent(t)
	a := startNSAgent(t, bin, nsA, dirA, "node-a", pingAddrA)
	b := startNSAgent(t, bin, nsB, dirB, "node-b", pingAddrB)
	a.waitRoutes(t, ctx, pingAddrB, pingBlkB, pingBlkA)
	b.waitRoutes(t, ctx, pingAddrA, pingBlkA, pingBlkB)
	for _, n := range a.state(t, ctx).Neighbors {
		if n.Address == pingAddrB && !n.Passive {
			t.Fatalf("node-a's neighbor node-b is not passive: node-a would dial it")
		}
	}

	watchA := watchRoutes(t, nsA)
	for round := 1; round <= 2; round++ {
		before := a.state(t, ctx).session(pingAddrB)
		logFrom := len(a.logs())
		if err := b.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = b.cmd.Wait()
		t0 := time.Now()
		b = startNSAgent(t, bin, nsB, dirB, "node-b", pingAddrB)
		a.waitRoutes(t, ctx, pingAddrB, pingBlkB, pingBlkA)
		b.waitRoutes(t, ctx, pingAddrA, pingBlkA, pingBlkB)
		waitState(t, ctx, 30*time.Second, a.fetch, "node-a: node-b's stale paths gone with its End-of-RIB",
			func(d stateDump) bool { return len(d.Routing.Stale) == 0 })
		d := a.state(t, ctx)
		s := d.session(pingAddrB)
		t.Logf("round %d: node-b killed and restarted; node-a established with it again and settled after %v (session since %v, flaps %d, recreate %d)",
			round, time.Since(t0).Round(time.Millisecond), s.Since.Format(time.RFC3339Nano), s.Flaps, s.Recreate)
		if s.Recreate <= before.Recreate {
			t.Errorf("round %d: node-a did not configure node-b anew after the graceful loss: recreate %d, before %d (last down reason %q)",
				round, s.Recreate, before.Recreate, s.LastDownReason)
		}
		if s.Phase != state.PhaseEstablished {
			t.Errorf("round %d: node-a's session with node-b is %s", round, s.Phase)
		}
		logs := a.logs()[logFrom:]
		refused := strings.Count(logs, "Closed an accepted connection") + strings.Count(logs, "accepted conn is closed")
		t.Logf("round %d: connections node-a refused: %d", round, refused)
		if refused > 0 {
			t.Errorf("round %d: node-a refused %d of the restarted node-b's connections", round, refused)
		}
	}
	if ev := watchA.stop(); len(ev) > 0 {
		t.Errorf("node-a: kernel route messages across node-b's restarts, want none:\n%s", strings.Join(ev, "\n"))
	} else {
		t.Logf("node-a: no kernel route deleted, replaced or added across node-b's two restarts")
	}
}
