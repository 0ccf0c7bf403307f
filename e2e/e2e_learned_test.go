package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/peeragent/peeragent/state"
)

// TestTwoAgentsLearnEachOthersBlocks: two agents (--dataplane none) from
// the lab's IPAM objects: each one's route table gets the other's block
// via the other node, origin learned, under the running speaker's
// generation, and settles on the other's End-of-RIB (docs/routes.md §9.1,
// §9.6).
func TestTwoAgentsLearnEachOthersBlocks(t *testing.T) {
	requireAddr(t, "127.0.0.2")
	ipam, err := os.ReadFile("../examples/lab/ipam.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bin := buildAgent(t)
	dir := t.TempDir()
	writeFile(t, dir, "nodes.yaml", e2eNodes)
	writeFile(t, dir, "bgp.yaml", fmt.Sprintf("apiVersion: crd.projectcalico.org/v1\nkind: BGPConfiguration\nmetadata: {name: default}\nspec: {listenPort: %d}\n", freeBGPPort(t)))
	writeFile(t, dir, "ipam.yaml", string(ipam))
	a := startAgent(t, bin, dir, "node-a", "127.0.0.1", "--dataplane", "none")
	b := startAgent(t, bin, dir, "node-b", "127.0.0.2", "--dataplane", "none")
	waitLearned(t, a, "10.244.2.0/26", "127.0.0.2", "10.244.1.0/26")
	waitLearned(t, b, "10.244.1.0/26", "127.0.0.1", "10.244.2.0/26")
}

// waitLearned waits until the agent's table routes prefix via nextHop
// (learned, skipped by --dataplane none), has its own block as a drop
// route, and is settled on nextHop's End-of-RIB.
func waitLearned(t *testing.T, a *agentProc, prefix, nextHop, own string) {
	t.Helper()
	waitState(t, context.Background(), 45*time.Second, a.fetch,
		fmt.Sprintf("%s: learned route %s via %s, drop %s, settled", a.node, prefix, nextHop, own), func(d stateDump) bool {
			r, o := d.route(prefix), d.route(own)
			learned := r != nil && r.Origin == "learned" && len(r.Via) == 1 && r.Via[0].String() == nextHop && r.Phase == state.RoutePhaseSkipped
			drop := o != nil && o.Drop && o.Phase == state.RoutePhaseSkipped
			return learned && drop && d.Routing.Settled && d.Routing.SpeakerGen > 0 &&
				d.Routing.HasEOR(netip.MustParseAddr(nextHop), "ipv4-unicast")
		})
}
