package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/watch"
)

// TestClusterWatchersFollowObjects: crd.projectcalico.org/v1, the real GoBGP
// executor. BGPPeers, Nodes (labels, Calico annotations), a Secret (missing,
// created, rotated) and the default BGPConfiguration (mesh toggle, AS) are
// created, changed and deleted through the API server; after each change
// the State and GoBGP's neighbors match, and the speaker effects are
// exactly the ones the change calls for.
func TestClusterWatchersFollowObjects(t *testing.T) {
	e := clusterStart(t, 60*time.Second, nil, clusterCRDs)
	group := watch.GroupCRD
	port := freePort(t, clusterAddr)
	if g, err := watch.ResolveGroup(e.cs.Discovery(), watch.GroupAuto); err != nil || g != watch.GroupCRD {
		t.Errorf("auto with only crd.projectcalico.org installed resolves to %q, %v; want %s", g, err, watch.GroupCRD)
	}
	e.putNode(clusterNode, map[string]string{"rack": "r1"}, map[string]string{watch.AnnotationIPv4: "127.0.0.1/8"})
	e.putNode("node-b", map[string]string{"rack": "r2"}, map[string]string{watch.AnnotationIPv4: "127.0.0.2/8"})
	e.putCalico(group, "BGPConfiguration", "default", map[string]any{"listenPort": int64(port)})

	a := e.startAgent(clusterAgentConfig{group: group, realBGP: true})
	mesh2 := clusterNbr{addr: "127.0.0.2", asn: 64512, local: 64512, origin: "mesh"}
	a.initial("initial list", 64512, mesh2)
	if !a.loop.Ready() {
		t.Error("the loop is not ready after the initial list")
	}
	if effs := a.speaker.strings(0); !clusterSameKinds(effs, "start-server as=64512", "set-policy 127.0.0.2", "add-peer 127.0.0.2") {
		t.Errorf("initial effects: %q, want the server start and the mesh neighbor", effs)
	}

	tor := map[string]any{"nodeSelector": "rack == 'r1'", "peerIP": "127.0.0.10", "asNumber": int64(65010),
		"password": map[string]any{"secretKeyRef": map[string]any{"name": "tor-md5", "key": clusterKey}}}
	torWaiting := clusterNbr{addr: "127.0.0.10", asn: 65010, local: 64512, origin: "bgppeer/tor", wait: true}
	effs := a.step("BGPPeer tor created, its Secret missing", func() { e.putCalico(group, "BGPPeer", "tor", tor) },
		64512, mesh2, torWaiting)
	clusterExpect(t, "a neighbor waiting for its Secret", effs)
	if !a.hasProblem("waiting for secret "+clusterNS+"/tor-md5 key "+clusterKey) || !a.watches.watching("tor-md5") {
		t.Errorf("held back without a visible problem or a secret watch: problems %v, watch calls %v", a.problems(), a.watches.list())
	}

	const pw1, pw2 = "cluster-md5-one", "cluster-md5-two"
	torPW := func(pw string, local uint32) clusterNbr {
		return clusterNbr{addr: "127.0.0.10", asn: 65010, local: local, origin: "bgppeer/tor", pw: pw}
	}
	effs = a.step("Secret tor-md5 created", func() { e.putSecret(clusterNS, "tor-md5", map[string]string{clusterKey: pw1}) },
		64512, mesh2, torPW(pw1, 64512))
	clusterExpect(t, "the Secret arrived", effs, "set-policy 127.0.0.10", "add-peer 127.0.0.10")

	effs = a.step("Secret tor-md5 rotated", func() { e.putSecret(clusterNS, "tor-md5", map[string]string{clusterKey: pw2}) },
		64512, mesh2, torPW(pw2, 64512))
	clusterExpect(t, "a password rotation", effs, "update-peer 127.0.0.10")

	effs = a.stepInputs("unrelated label on node-b", func() {
		e.editNode("node-b", func(n *corev1.Node) { n.Labels["zone"] = "z1" })
	}, func(s state.State) bool { return clusterNodeLabel(s, "node-b", "zone") == "z1" })
	clusterExpect(t, "a label no selector reads", effs)

	effs = a.step("node-a relabelled rack=r2: the BGPPeer's selector no longer matches", func() {
		e.editNode(clusterNode, func(n *corev1.Node) { n.Labels["rack"] = "r2" })
	}, 64512, mesh2)
	clusterExpect(t, "the selector flipped off", effs, "delete-peer 127.0.0.10", "delete-policy 127.0.0.10")
	if a.watches.watching("tor-md5") {
		t.Errorf("the Secret is still watched with no neighbor using it: %v", a.watches.list())
	}

	effs = a.step("node-a relabelled rack=r1: matches again", func() {
		e.editNode(clusterNode, func(n *corev1.Node) { n.Labels["rack"] = "r1" })
	}, 64512, mesh2, torPW(pw2, 64512))
	clusterExpect(t, "the selector flipped on", effs, "set-policy 127.0.0.10", "add-peer 127.0.0.10")

	mesh3 := clusterNbr{addr: "127.0.0.3", asn: 65002, local: 64512, origin: "mesh"}
	effs = a.step("node-b annotations: address 127.0.0.3, AS 65002", func() {
		e.editNode("node-b", func(n *corev1.Node) {
			n.Annotations[watch.AnnotationIPv4] = "127.0.0.3/8"
			n.Annotations[watch.AnnotationASN] = "65002"
		})
	}, 64512, mesh3, torPW(pw2, 64512))
	clusterExpect(t, "a mesh node moved", effs, "delete-peer 127.0.0.2", "delete-policy 127.0.0.2", "set-policy 127.0.0.3", "add-peer 127.0.0.3")

	off := false
	effs = a.step("BGPConfiguration: mesh off", func() {
		e.putCalico(group, "BGPConfiguration", "default", map[string]any{"listenPort": int64(port), "nodeToNodeMeshEnabled": off})
	}, 64512, torPW(pw2, 64512))
	clusterExpect(t, "mesh off", effs, "delete-peer 127.0.0.3", "delete-policy 127.0.0.3")

	effs = a.step("BGPConfiguration: mesh on", func() {
		e.putCalico(group, "BGPConfiguration", "default", map[string]any{"listenPort": int64(port), "nodeToNodeMeshEnabled": !off})
	}, 64512, mesh3, torPW(pw2, 64512))
	clusterExpect(t, "mesh on", effs, "set-policy 127.0.0.3", "add-peer 127.0.0.3")

	mesh3.local = 64513
	effs = a.step("BGPConfiguration: AS 64513", func() {
		e.putCalico(group, "BGPConfiguration", "default", map[string]any{"listenPort": int64(port), "asNumber": int64(64513)})
	}, 64513, mesh3, torPW(pw2, 64513))
	clusterExpect(t, "the node's AS changed", effs, "restart-server as", "set-policy 127.0.0.3", "add-peer 127.0.0.3", "set-policy 127.0.0.10", "add-peer 127.0.0.10")

	effs = a.step("BGPPeer tor deleted", func() { e.deleteCalico(group, "BGPPeer", "tor") }, 64513, mesh3)
	clusterExpect(t, "the BGPPeer deleted", effs, "delete-peer 127.0.0.10", "delete-policy 127.0.0.10")
	if a.watches.watching("tor-md5") {
		t.Errorf("the Secret is still watched after its BGPPeer went: %v", a.watches.list())
	}

	effs = a.step("Node node-b deleted", func() { e.deleteNode("node-b") }, 64513)
	clusterExpect(t, "the last mesh node deleted", effs, "delete-peer 127.0.0.3", "delete-policy 127.0.0.3")
	a.alive()
	t.Logf("watch calls: %s; whole test %v", strings.Join(a.watches.list(), ", "), time.Since(e.started).Round(time.Millisecond))
}
