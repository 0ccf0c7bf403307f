package e2e

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	birdtest "github.com/peeragent/peeragent/internal/testrig/bird"
	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/watch"
)

// TestClusterReportsRoutes: the Routes class of this node's
// CalicoNodeStatus, written through the real API server by the status
// reporter as run wires it, from the real GoBGP speaker. BIRD (a ToR, a
// global BGPPeer) announces 10.250.0.0/24; the node has an IPPool and a
// BlockAffinity. status.routes.routesV4 gets the block as calico-node
// reports BIRD's static blackhole and the ToR's prefix with its gateway,
// learned from the BGPPeer at BIRD's address; both chosen (FIB).
func TestClusterReportsRoutes(t *testing.T) {
	birdtest.Require(t)
	e := clusterStart(t, 90*time.Second, nil, clusterCRDs)
	group := watch.GroupCRD
	birdAddr := netip.MustParseAddr("127.0.0.44")
	b, birdPort, port := clusterStartBird(t, birdAddr.String(), netip.MustParsePrefix("10.250.0.0/24"))
	e.putNode(clusterNode, nil, map[string]string{watch.AnnotationIPv4: "127.0.0.1/8"})
	e.putCalico(group, "BGPConfiguration", "default", map[string]any{"asNumber": int64(64512), "listenPort": int64(port),
		"nodeToNodeMeshEnabled": false})
	e.putCalico(group, "IPPool", "pool1", map[string]any{"cidr": "10.244.0.0/16", "ipipMode": "Never", "vxlanMode": "Never"})
	e.putCalico(group, "BlockAffinity", "node-a-10-244-1-0-26", map[string]any{"node": clusterNode, "cidr": "10.244.1.0/26",
		"state": "confirmed", "deleted": "false"})
	e.putCalico(group, "BGPPeer", "tor", map[string]any{"peerIP": netip.AddrPortFrom(birdAddr, uint16(birdPort)).String(),
		"asNumber": int64(65001)})
	e.putCalico(group, "CalicoNodeStatus", "node-a-routes", map[string]any{"node": clusterNode,
		"classes": []any{"Routes"}, "updatePeriodSeconds": int64(1)})

	rep := e.startReporter(group)
	a := e.startAgent(clusterAgentConfig{group: group, realBGP: true, learned: true, published: []func(state.State){rep.Observe}})
	defer a.stop()
	if _, err := b.WaitEstablished(e.ctx, "agent"); err != nil {
		t.Fatalf("BIRD's session with the agent: %v; problems %v", err, a.problems())
	}

	var routes string
	status, ok := e.waitNodeStatus(group, "node-a-routes", clusterWaitMax, func(status map[string]any) bool {
		j, _ := json.Marshal(status["routes"])
		routes = string(j)
		return strings.Contains(routes, "10.250.0.0/24") && strings.Contains(routes, "10.244.1.0/26")
	})
	if !ok {
		t.Fatalf("CalicoNodeStatus status.routes %s; problems %v", routes, a.problems())
	}
	j, _ := json.MarshalIndent(status, "", "  ")
	t.Logf("CalicoNodeStatus node-a-routes status read back:\n%s", j)
	var got struct {
		RoutesV4 []struct {
			Type, Destination, Gateway, Interface string
			LearnedFrom                           struct{ SourceType, PeerIP string }
		}
	}
	if err := json.Unmarshal([]byte(routes), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.RoutesV4) != 2 {
		t.Fatalf("routesV4 %+v: want the block and the ToR's prefix", got.RoutesV4)
	}
	blk, tor := got.RoutesV4[0], got.RoutesV4[1]
	if blk.Destination != "10.244.1.0/26" || blk.Type != "FIB" || blk.Gateway != "N/A" || blk.Interface != "blackhole" || blk.LearnedFrom.SourceType != "Static" {
		t.Errorf("routesV4[0] %+v: want the block, FIB, N/A, blackhole, Static", blk)
	}
	if tor.Destination != "10.250.0.0/24" || tor.Type != "FIB" || tor.Gateway != birdAddr.String() ||
		tor.LearnedFrom.SourceType != "BGPPeer" || tor.LearnedFrom.PeerIP != birdAddr.String() {
		t.Errorf("routesV4[1] %+v: want the ToR's prefix, FIB, via and learned from BGPPeer %s", tor, birdAddr)
	}
}
