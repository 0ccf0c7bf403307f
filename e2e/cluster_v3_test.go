package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/peeragent/peeragent/watch"
)

// TestClusterCalicoV3Group: the same objects served as projectcalico.org/v3
// CRDs (deploy/crds/v3) only. An agent with the group projectcalico.org/v3,
// then one with "auto", which resolves to v3 because only that group
// exists, follow BGPPeers (node, selectors, peerSelector), Node labels and
// the BGPConfiguration. Once crd.projectcalico.org is installed too, auto
// resolves to crd.projectcalico.org/v1 again.
func TestClusterCalicoV3Group(t *testing.T) {
	e := clusterStart(t, 60*time.Second, nil, clusterCRDsV3)
	group := watch.GroupV3
	e.putNode(clusterNode, nil, map[string]string{watch.AnnotationIPv4: "127.0.0.1/8"})
	e.putNode("node-b", map[string]string{"role": "rr"}, map[string]string{watch.AnnotationIPv4: "127.0.0.2/8"})
	e.putNode("node-c", map[string]string{"role": "worker"}, map[string]string{watch.AnnotationIPv4: "127.0.0.3/8"})
	e.putCalico(group, "BGPConfiguration", "default", map[string]any{"nodeToNodeMeshEnabled": false, "asNumber": int64(64600)})
	e.putCalico(group, "BGPPeer", "tor", map[string]any{"node": clusterNode, "peerIP": "127.0.0.10", "asNumber": int64(65010)})
	e.putCalico(group, "BGPPeer", "to-rr", map[string]any{"nodeSelector": "all()", "peerSelector": "role == 'rr'"})

	a := e.startAgent(clusterAgentConfig{group: group})
	tor := clusterNbr{addr: "127.0.0.10", asn: 65010, local: 64600, origin: "bgppeer/tor"}
	rrB := clusterNbr{addr: "127.0.0.2", asn: 64600, local: 64600, origin: "bgppeer/to-rr"}
	rrC := clusterNbr{addr: "127.0.0.3", asn: 64600, local: 64600, origin: "bgppeer/to-rr"}
	a.initial("v3: initial list", 64600, tor, rrB)
	if !strings.Contains(a.logs.String(), "group="+group) {
		t.Errorf("the kube source did not log group %s", group)
	}

	tor.asn = 65020
	effs := a.step("v3: BGPPeer tor AS 65020", func() {
		e.putCalico(group, "BGPPeer", "tor", map[string]any{"node": clusterNode, "peerIP": "127.0.0.10", "asNumber": int64(65020)})
	}, 64600, tor, rrB)
	clusterExpect(t, "v3 BGPPeer updated", effs, "update-peer 127.0.0.10")

	effs = a.step("v3: node-c labelled role=rr", func() {
		e.editNode("node-c", func(n *corev1.Node) { n.Labels["role"] = "rr" })
	}, 64600, tor, rrB, rrC)
	clusterExpect(t, "a peerSelector now matches node-c", effs, "set-policy 127.0.0.3", "add-peer 127.0.0.3")

	effs = a.step("v3: BGPPeer to-rr deleted", func() { e.deleteCalico(group, "BGPPeer", "to-rr") }, 64600, tor)
	clusterExpect(t, "v3 BGPPeer deleted", effs, "delete-peer 127.0.0.2", "delete-policy 127.0.0.2", "delete-peer 127.0.0.3", "delete-policy 127.0.0.3")

	tor.local = 64601
	effs = a.step("v3: BGPConfiguration AS 64601", func() {
		e.putCalico(group, "BGPConfiguration", "default", map[string]any{"nodeToNodeMeshEnabled": false, "asNumber": int64(64601)})
	}, 64601, tor)
	clusterExpect(t, "v3 BGPConfiguration changed the AS", effs, "restart-server as", "set-policy 127.0.0.10", "add-peer 127.0.0.10")
	a.alive()
	a.stop()

	// "auto" on a cluster that serves only projectcalico.org.
	if g, err := watch.ResolveGroup(e.cs.Discovery(), watch.GroupAuto); err != nil || g != watch.GroupV3 {
		t.Fatalf("auto with only projectcalico.org installed resolves to %q, %v; want %s", g, err, watch.GroupV3)
	}
	b := e.startAgent(clusterAgentConfig{group: watch.GroupAuto})
	b.initial("auto: initial list", 64601, tor)
	if !strings.Contains(b.logs.String(), "group="+watch.GroupV3) {
		t.Errorf("the kube source with group auto did not log group %s:\n%s", watch.GroupV3, b.logs.String())
	}
	torB := clusterNbr{addr: "127.0.0.11", asn: 65011, local: 64601, origin: "bgppeer/tor-b"}
	effs = b.step("auto: BGPPeer tor-b created", func() {
		e.putCalico(group, "BGPPeer", "tor-b", map[string]any{"node": clusterNode, "peerIP": "127.0.0.11", "asNumber": int64(65011)})
	}, 64601, tor, torB)
	clusterExpect(t, "auto: v3 BGPPeer created", effs, "set-policy 127.0.0.11", "add-peer 127.0.0.11")
	effs = b.step("auto: BGPPeer tor deleted", func() { e.deleteCalico(group, "BGPPeer", "tor") }, 64601, torB)
	clusterExpect(t, "auto: v3 BGPPeer deleted", effs, "delete-peer 127.0.0.10", "delete-policy 127.0.0.10")
	b.alive()
	b.stop()

	e.kc.InstallCRDs(t, clusterCRDs)
	if g, err := watch.ResolveGroup(e.cs.Discovery(), watch.GroupAuto); err != nil || g != watch.GroupCRD {
		t.Errorf("auto with both groups installed resolves to %q, %v; want %s", g, err, watch.GroupCRD)
	}
	t.Logf("whole test %v", time.Since(e.started).Round(time.Millisecond))
}
