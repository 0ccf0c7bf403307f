package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/peeragent/peeragent/internal/testrig/frr"
)

// TestAgentFollowsSecretFileRotationWithFRR: the agent binary, fed by a
// manifest directory, peers with a real FRR over TCP-MD5; editing the
// Secret's file (and FRR's key) re-establishes the session with the new
// password, counted by FRR's own connectionsEstablished.
func TestAgentFollowsSecretFileRotationWithFRR(t *testing.T) {
	frr.Require(t)
	bin := buildAgent(t)
	dir := t.TempDir()
	ours, frrAddr := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.61")
	ourPort, frrPort := frr.FreePort(t, ours), frr.FreePort(t, frrAddr)
	writeFile(t, dir, "nodes.yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-a\n  annotations: {projectcalico.org/IPv4Address: 127.0.0.1/8}\n")
	writeFile(t, dir, "bgp.yaml", fmt.Sprintf(`apiVersion: crd.projectcalico.org/v1
kind: BGPConfiguration
metadata: {name: default}
spec: {listenPort: %d, nodeToNodeMeshEnabled: false}
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: frr}
spec:
  node: node-a
  peerIP: 127.0.0.61:%d
  asNumber: 65061
  password: {secretKeyRef: {name: frr-pass, key: key}}
`, ourPort, frrPort))
	writeFile(t, dir, "secret.yaml", fmt.Sprintf(e2eFRRSecret, "frr-first-key"))
	cfg := frr.Config{Address: frrAddr, Port: frrPort, AS: 65061, Neighbors: []frr.Neighbor{
		{Name: "agent", Address: ours, Port: ourPort, AS: 64512, Password: "frr-first-key"}}}
	peer := frr.Start(t, cfg)
	a := startAgent(t, bin, dir, "node-a", "127.0.0.1")

	fp1 := waitSession(t, a, "127.0.0.61", "")
	waitFRR(t, peer, ours, 1)
	writeFile(t, dir, "secret.yaml", fmt.Sprintf(e2eFRRSecret, "frr-second-key"))
	cfg.Neighbors[0].Password = "frr-second-key"
	if err := peer.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	}
	fp2 := waitSession(t, a, "127.0.0.61", "")
	for fp2 == fp1 {
		fp2 = waitSession(t, a, "127.0.0.61", "")
	}
	n := waitFRR(t, peer, ours, 2)
	t.Logf("FRR connectionsEstablished %d after the rotation (password %s -> %s)", n.ConnectionsEstablished, fp1, fp2)
}

const e2eFRRSecret = `apiVersion: v1
kind: Secret
metadata: {name: frr-pass, namespace: calico-vpp-dataplane}
stringData: {key: %s}
`

func waitFRR(t *testing.T, f *frr.FRR, addr netip.Addr, established int) frr.NeighborState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	n, err := f.WaitNeighbor(ctx, addr, func(n frr.NeighborState) bool {
		return n.Established() && n.ConnectionsEstablished == established
	})
	if err != nil {
		t.Fatalf("FRR: neighbor %s not established %d times: %v", addr, established, err)
	}
	return n
}
