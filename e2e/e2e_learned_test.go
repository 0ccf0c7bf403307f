package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
	if testing.Short() {
		t.Skip("end-to-end test: builds the binary and runs two agents")
	}
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

// routesDump is the route part of /state.
type routesDump struct {
	Routing state.Routing       `json:"routing"`
	Routes  []*state.TableRoute `json:"routes"`
}

// waitLearned waits until the agent's table routes prefix via nextHop
// (learned, skipped by --dataplane none), has its own block as a drop
// route, and is settled on nextHop's End-of-RIB.
func waitLearned(t *testing.T, a *agentProc, prefix, nextHop, own string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	var d routesDump
	for {
		d = routesDump{}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a.http+"/state", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&d)
			resp.Body.Close()
		}
		var learned, drop bool
		for _, r := range d.Routes {
			switch {
			case r.Prefix.String() == prefix:
				learned = r.Origin == "learned" && len(r.Via) == 1 && r.Via[0].String() == nextHop && r.Phase == state.RoutePhaseSkipped
			case r.Prefix.String() == own:
				drop = r.Drop && r.Phase == state.RoutePhaseSkipped
			}
		}
		if learned && drop && d.Routing.Settled && d.Routing.SpeakerGen > 0 && d.Routing.HasEOR(netip.MustParseAddr(nextHop), "ipv4-unicast") {
			return
		}
		select {
		case <-ctx.Done():
			js, _ := json.Marshal(d)
			t.Fatalf("%s: no learned route %s via %s, settled: %s", a.node, prefix, nextHop, js)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
