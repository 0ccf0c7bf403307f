package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	clientretry "k8s.io/client-go/util/retry"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/effects/gobgp"
	"github.com/peeragent/peeragent/internal/kubetest"
	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/watch"
)

// The cluster tests (issue 5, item 2, and the "Secret read refused" and
// "API server unavailable" faults of item 5): the agent's Kubernetes
// source (watch.Kube) and its real Loop against a real kube-apiserver and
// etcd (internal/kubetest), with the CRDs of deploy/crds installed. Each
// test changes objects through the API server and waits, with a bound,
// until the agent's State (neighbors, session phases, problems) and, where
// the real GoBGP executor runs, GoBGP's own neighbor list (ListPeer) show
// the change; the speaker effects each change caused are counted by a
// wrapper round the executor.
//
// The real GoBGP executor listens on 127.0.0.1 only, on a free port given by
// the BGPConfiguration; every neighbor is on 127.0.0.0/8, where nothing
// answers, so no session is established and nothing leaves the machine.

const (
	clusterNS       = state.DefaultNamespace // the agent's namespace, as in deploy/
	clusterSA       = "peeragent"            // deploy/serviceaccount.yaml
	clusterNode     = "node-a"               // the node the agent runs on
	clusterAddr     = "127.0.0.1"
	clusterDeploy   = "../../deploy"
	clusterKey      = "password"
	clusterWaitMax  = 30 * time.Second // one wait for the agent to follow
	clusterMarker   = "test/cluster-settle"
	clusterOutageOf = 3 * time.Second // how long the API server stays down
)

var (
	clusterCRDs   = filepath.Join(clusterDeploy, "crds")
	clusterCRDsV3 = filepath.Join(clusterDeploy, "crds", "v3")
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
	port := clusterFreePort(t)
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
	if effs := a.speaker.since(0); !clusterSameKinds(effs, "start-server as=64512", "add-peer 127.0.0.2") {
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
	clusterExpect(t, "the Secret arrived", effs, "add-peer 127.0.0.10")

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
	clusterExpect(t, "the selector flipped off", effs, "delete-peer 127.0.0.10")
	if a.watches.watching("tor-md5") {
		t.Errorf("the Secret is still watched with no neighbor using it: %v", a.watches.list())
	}

	effs = a.step("node-a relabelled rack=r1: matches again", func() {
		e.editNode(clusterNode, func(n *corev1.Node) { n.Labels["rack"] = "r1" })
	}, 64512, mesh2, torPW(pw2, 64512))
	clusterExpect(t, "the selector flipped on", effs, "add-peer 127.0.0.10")

	mesh3 := clusterNbr{addr: "127.0.0.3", asn: 65002, local: 64512, origin: "mesh"}
	effs = a.step("node-b annotations: address 127.0.0.3, AS 65002", func() {
		e.editNode("node-b", func(n *corev1.Node) {
			n.Annotations[watch.AnnotationIPv4] = "127.0.0.3/8"
			n.Annotations[watch.AnnotationASN] = "65002"
		})
	}, 64512, mesh3, torPW(pw2, 64512))
	clusterExpect(t, "a mesh node moved", effs, "delete-peer 127.0.0.2", "add-peer 127.0.0.3")

	off := false
	effs = a.step("BGPConfiguration: mesh off", func() {
		e.putCalico(group, "BGPConfiguration", "default", map[string]any{"listenPort": int64(port), "nodeToNodeMeshEnabled": off})
	}, 64512, torPW(pw2, 64512))
	clusterExpect(t, "mesh off", effs, "delete-peer 127.0.0.3")

	effs = a.step("BGPConfiguration: mesh on", func() {
		e.putCalico(group, "BGPConfiguration", "default", map[string]any{"listenPort": int64(port), "nodeToNodeMeshEnabled": !off})
	}, 64512, mesh3, torPW(pw2, 64512))
	clusterExpect(t, "mesh on", effs, "add-peer 127.0.0.3")

	mesh3.local = 64513
	effs = a.step("BGPConfiguration: AS 64513", func() {
		e.putCalico(group, "BGPConfiguration", "default", map[string]any{"listenPort": int64(port), "asNumber": int64(64513)})
	}, 64513, mesh3, torPW(pw2, 64513))
	clusterExpect(t, "the node's AS changed", effs, "restart-server as", "add-peer 127.0.0.3", "add-peer 127.0.0.10")

	effs = a.step("BGPPeer tor deleted", func() { e.deleteCalico(group, "BGPPeer", "tor") }, 64513, mesh3)
	clusterExpect(t, "the BGPPeer deleted", effs, "delete-peer 127.0.0.10")
	if a.watches.watching("tor-md5") {
		t.Errorf("the Secret is still watched after its BGPPeer went: %v", a.watches.list())
	}

	effs = a.step("Node node-b deleted", func() { e.deleteNode("node-b") }, 64513)
	clusterExpect(t, "the last mesh node deleted", effs, "delete-peer 127.0.0.3")
	a.alive()
	t.Logf("watch calls: %s; whole test %v", strings.Join(a.watches.list(), ", "), time.Since(e.started).Round(time.Millisecond))
}

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
	clusterExpect(t, "a peerSelector now matches node-c", effs, "add-peer 127.0.0.3")

	effs = a.step("v3: BGPPeer to-rr deleted", func() { e.deleteCalico(group, "BGPPeer", "to-rr") }, 64600, tor)
	clusterExpect(t, "v3 BGPPeer deleted", effs, "delete-peer 127.0.0.2", "delete-peer 127.0.0.3")

	tor.local = 64601
	effs = a.step("v3: BGPConfiguration AS 64601", func() {
		e.putCalico(group, "BGPConfiguration", "default", map[string]any{"nodeToNodeMeshEnabled": false, "asNumber": int64(64601)})
	}, 64601, tor)
	clusterExpect(t, "v3 BGPConfiguration changed the AS", effs, "restart-server as", "add-peer 127.0.0.10")
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
	clusterExpect(t, "auto: v3 BGPPeer created", effs, "add-peer 127.0.0.11")
	effs = b.step("auto: BGPPeer tor deleted", func() { e.deleteCalico(group, "BGPPeer", "tor") }, 64601, torB)
	clusterExpect(t, "auto: v3 BGPPeer deleted", effs, "delete-peer 127.0.0.10")
	b.alive()
	b.stop()

	e.kc.InstallCRDs(t, clusterCRDs)
	if g, err := watch.ResolveGroup(e.cs.Discovery(), watch.GroupAuto); err != nil || g != watch.GroupCRD {
		t.Errorf("auto with both groups installed resolves to %q, %v; want %s", g, err, watch.GroupCRD)
	}
	t.Logf("whole test %v", time.Since(e.started).Round(time.Millisecond))
}

// TestClusterRBAC: the agent runs as the ServiceAccount of deploy/, with the
// namespace, ServiceAccount, ClusterRole(+Binding) and Role(+Binding) of
// deploy/ created from their YAML. It reads every kind and the Secret of
// its namespace that a BGPPeer references. Configured with a secrets
// namespace where it has no Role, the Secret read is refused (403): that
// shows as a problem secret/NS/NAME "forbidden" in the State, the neighbor
// waits, the other neighbors keep following their changes, nothing
// crashes; a Role granted there later lets the waiting neighbor in.
func TestClusterRBAC(t *testing.T) {
	e := clusterStart(t, 60*time.Second, nil, clusterCRDs)
	group := watch.GroupCRD
	const elsewhere = "peeragent-elsewhere"
	const pwHome, pwElsewhere = "cluster-md5-home", "cluster-md5-elsewhere"
	e.applyObjects(e.manifests(filepath.Join(clusterDeploy, "serviceaccount.yaml"))...)
	rbac := e.manifests(filepath.Join(clusterDeploy, "rbac.yaml"))
	e.applyObjects(rbac...)
	e.applyObjects(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": elsewhere}}})
	e.putSecret(clusterNS, "tor-md5", map[string]string{clusterKey: pwHome})
	e.putSecret(elsewhere, "tor-md5", map[string]string{clusterKey: pwElsewhere})
	e.putNode(clusterNode, nil, map[string]string{watch.AnnotationIPv4: "127.0.0.1/8"})
	e.putNode("node-b", nil, map[string]string{watch.AnnotationIPv4: "127.0.0.2/8"})
	e.putCalico(group, "BGPConfiguration", "default", map[string]any{"nodeToNodeMeshEnabled": false})
	e.putCalico(group, "BGPPeer", "tor-a", map[string]any{"node": clusterNode, "peerIP": "127.0.0.10", "asNumber": int64(65010),
		"password": map[string]any{"secretKeyRef": map[string]any{"name": "tor-md5", "key": clusterKey}}})
	e.putCalico(group, "BGPPeer", "tor-b", map[string]any{"peerIP": "127.0.0.11", "asNumber": int64(65011)})

	sa := e.kc.ConfigFor(clusterNS, clusterSA)
	e.checkServiceAccount(sa, group, elsewhere)

	// In its own namespace: everything it needs is readable.
	a := e.startAgent(clusterAgentConfig{rest: sa, group: group})
	torA := clusterNbr{addr: "127.0.0.10", asn: 65010, local: 64512, origin: "bgppeer/tor-a", pw: pwHome}
	torB := clusterNbr{addr: "127.0.0.11", asn: 65011, local: 64512, origin: "bgppeer/tor-b"}
	a.initial("ServiceAccount, own namespace: initial list", 64512, torA, torB)
	if ps := a.problems(); len(ps) != 0 {
		t.Errorf("problems as the ServiceAccount in its own namespace: %v", ps)
	}
	a.alive()
	a.stop()

	// Secrets namespace without a Role: the read is refused.
	b := e.startAgent(clusterAgentConfig{rest: sa, group: group, namespace: elsewhere})
	torAWait := clusterNbr{addr: "127.0.0.10", asn: 65010, local: 64512, origin: "bgppeer/tor-a", wait: true}
	b.initial("ServiceAccount, secrets in "+elsewhere+": initial list", 64512, torAWait, torB)
	forbidden := "secret/" + elsewhere + "/tor-md5"
	var refusal state.Problem
	if !clusterPoll(e.ctx, clusterWaitMax, func() bool {
		for _, p := range b.problems() {
			if p.Object == forbidden && strings.Contains(p.Reason, "forbidden") {
				refusal = p
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no problem %s forbidden in the State: %v", forbidden, b.problems())
	}
	t.Logf("the refusal in the State: %s: %q", refusal.Object, refusal.Reason)
	if !b.hasProblem("waiting for secret " + elsewhere + "/tor-md5 key " + clusterKey) {
		t.Errorf("the neighbor held back has no waiting problem: %v", b.problems())
	}
	for _, p := range b.problems() {
		if strings.Contains(p.Reason, pwElsewhere) || strings.Contains(p.Reason, pwHome) {
			t.Errorf("a password in a problem: %s", p.Object)
		}
	}

	torB.asn = 65012
	effs := b.step("while refused: BGPPeer tor-b AS 65012", func() {
		e.putCalico(group, "BGPPeer", "tor-b", map[string]any{"peerIP": "127.0.0.11", "asNumber": int64(65012)})
	}, 64512, torAWait, torB)
	clusterExpect(t, "another neighbor changed while the Secret is refused", effs, "update-peer 127.0.0.11")
	torC := clusterNbr{addr: "127.0.0.12", asn: 65013, local: 64512, origin: "bgppeer/tor-c"}
	effs = b.step("while refused: BGPPeer tor-c created", func() {
		e.putCalico(group, "BGPPeer", "tor-c", map[string]any{"peerIP": "127.0.0.12", "asNumber": int64(65013)})
	}, 64512, torAWait, torB, torC)
	clusterExpect(t, "another neighbor added while the Secret is refused", effs, "add-peer 127.0.0.12")
	if !b.hasProblem("forbidden") {
		t.Errorf("the refusal is no longer shown while it lasts: %v", b.problems())
	}
	b.alive()

	// The Role of deploy/, granted in the other namespace: the retried
	// read succeeds and the neighbor comes in with that namespace's Secret.
	var grant []*unstructured.Unstructured
	for _, o := range rbac {
		if o.GetKind() == "Role" || o.GetKind() == "RoleBinding" {
			o = o.DeepCopy()
			o.SetNamespace(elsewhere)
			grant = append(grant, o)
		}
	}
	torA = clusterNbr{addr: "127.0.0.10", asn: 65010, local: 64512, origin: "bgppeer/tor-a", pw: pwElsewhere}
	effs = b.step("Role granted in "+elsewhere, func() { e.applyObjects(grant...) }, 64512, torA, torB, torC)
	clusterExpect(t, "the refused Secret readable at last", effs, "add-peer 127.0.0.10")
	if ps := b.problems(); len(ps) != 0 {
		t.Errorf("problems left after the grant: %v", ps)
	}
	b.alive()
	t.Logf("whole test %v", time.Since(e.started).Round(time.Millisecond))
}

// TestClusterAPIServerRestart: the real GoBGP executor, steady with two
// mesh neighbors and a BGPPeer with a password, while kube-apiserver is
// (1) restarted (kubetest Restart) and (2) stopped for clusterOutageOf,
// then started again. After each, changes made through the API server to
// every watched kind arrive, first through the reflectors' relists, then
// as watch events (the watches recovered); from before the disruption
// until then, the loop handed the executor no effect and started or
// stopped no Secret watch, and GoBGP's neighbors and the sessions'
// generations did not move. A password rotation afterwards is exactly one
// update.
//
// Each disruption gets an agent of its own: client-go's reflector backoff
// (0.8 s doubling to 30 s, jitter up to 100 %, reset after 2 min) grows
// with every relist, so a second outage for the same agent may take it a
// minute to notice the API server is back; that is client-go's default,
// not a bug, but it would make a bounded test flaky.
func TestClusterAPIServerRestart(t *testing.T) {
	// Without a watch termination grace period kube-apiserver waits for
	// open watches (ours) to end before it exits, up to its 60 s request
	// timeout, and kubetest kills it after 15 s: with one, it ends them on
	// SIGTERM, as a rolling restart of a real control plane does.
	e := clusterStart(t, 80*time.Second, []kubetest.Option{kubetest.WithAPIServerArgs("--shutdown-watch-termination-grace-period=2s")}, clusterCRDs)
	group := watch.GroupCRD
	port := clusterFreePort(t)
	const pw1, pw2 = "cluster-restart-one", "cluster-restart-two"
	e.putNode(clusterNode, nil, map[string]string{watch.AnnotationIPv4: "127.0.0.1/8"})
	e.putNode("node-b", nil, map[string]string{watch.AnnotationIPv4: "127.0.0.2/8"})
	e.putNode("node-c", nil, map[string]string{watch.AnnotationIPv4: "127.0.0.3/8"})
	e.putCalico(group, "BGPConfiguration", "default", map[string]any{"listenPort": int64(port)})
	e.putCalico(group, "BGPPeer", "tor", map[string]any{"node": clusterNode, "peerIP": "127.0.0.10", "asNumber": int64(65010),
		"password": map[string]any{"secretKeyRef": map[string]any{"name": "tor-md5", "key": clusterKey}}})
	e.putSecret(clusterNS, "tor-md5", map[string]string{clusterKey: pw1})
	want := []clusterNbr{
		{addr: "127.0.0.2", asn: 64512, local: 64512, origin: "mesh"},
		{addr: "127.0.0.3", asn: 64512, local: 64512, origin: "mesh"},
		{addr: "127.0.0.10", asn: 65010, local: 64512, origin: "bgppeer/tor", pw: pw1},
	}

	// Changes nobody's neighbors depend on, one per watched kind, each
	// visible in the State's inputs once its watch delivers it.
	unrelated := func(round string) {
		t.Helper()
		e.editNode("node-c", func(n *corev1.Node) { n.Labels["round"] = round })
		e.putCalico(group, "BGPPeer", "elsewhere-"+round, map[string]any{"node": "node-b", "peerIP": "127.0.0.20", "asNumber": int64(65020)})
		e.putSecret(clusterNS, "tor-md5", map[string]string{clusterKey: pw1, "unused": round})
		e.putCalico(group, "BGPConfiguration", "node.node-c", map[string]any{"logSeverityScreen": "Debug" + round})
	}
	arrived := func(round string) func(state.State) bool {
		return func(s state.State) bool {
			_, peer := s.Inputs.Peers.Get("elsewhere-" + round)
			cfg, hasCfg := s.Inputs.Configs.Get("node.node-c")
			sec, hasSec := s.Inputs.Secrets.Get("tor-md5")
			if !peer || !hasCfg || !hasSec || clusterNodeLabel(s, "node-c", "round") != round {
				return false
			}
			unused, ok := sec.Data["unused"]
			return ok && unused.Fingerprint() == state.NewPassword(round).Fingerprint() &&
				cfg.LogSeverityScreen == "Debug"+round
		}
	}
	// checkRecovery makes the changes of round, then those of round+"b", and
	// checks that the agent did nothing since before.
	checkRecovery := func(a *clusterAgent, what, round string, began time.Time, before clusterSnapshot) {
		t.Helper()
		unrelated(round)
		a.waitState(what+": changes made after it arrive", arrived(round))
		arrivedAfter := time.Since(began)
		a.settle()
		relisted := a.snapshot()
		unrelated(round + "b")
		a.waitState(what+": later changes arrive as watch events", arrived(round+"b"))
		a.settle()
		after := a.snapshot()
		events := after.since(relisted)
		t.Logf("%s: the changes made after it arrived %v after it began; from before it until they did: %s; "+
			"the next changes arrived as: %s", what, arrivedAfter.Round(time.Millisecond), relisted.since(before), events)
		for _, k := range []string{"nodeUpserted", "peerUpserted", "configUpserted", "secretUpserted"} {
			if events.actions[k] == 0 {
				t.Errorf("%s: no %s after recovery: the %s watch is not live", what, k, strings.TrimSuffix(k, "Upserted"))
			}
		}
		if d := after.since(before); d.effects != 0 || d.watchCalls != 0 {
			t.Errorf("%s: the loop handed the executor %d effects %q and made %d secret watch calls %q",
				what, d.effects, a.speaker.since(before.effects), d.watchCalls, a.watches.list()[before.watchCalls:])
		}
		a.same(what, before, want...)
	}

	// 1. Restart: kube-apiserver stopped and started again at once.
	a := e.startAgent(clusterAgentConfig{group: group, realBGP: true})
	a.initial("agent 1 steady before the restart", 64512, want...)
	before := a.snapshot()
	t0 := time.Now()
	if err := e.kc.Restart(); err != nil {
		t.Fatalf("restart kube-apiserver: %v", err)
	}
	t.Logf("restart: kube-apiserver stopped and ready again in %v", time.Since(t0).Round(time.Millisecond))
	checkRecovery(a, "restart", "1", t0, before)
	a.alive()
	a.stop()

	// 2. Unavailable for a while: the agent keeps its State and makes no
	// call while kube-apiserver is down.
	b := e.startAgent(clusterAgentConfig{group: group, realBGP: true})
	b.initial("agent 2 steady before the outage", 64512, want...)
	before = b.snapshot()
	t1 := time.Now()
	if err := e.kc.Stop(); err != nil {
		t.Fatalf("stop kube-apiserver: %v", err)
	}
	stopped := time.Since(t1)
	down, polls := time.Now(), 0
	for time.Since(down) < clusterOutageOf {
		b.alive()
		polls++
		if got := b.snapshot(); got.effects != before.effects || got.watchCalls != before.watchCalls || !b.loop.Ready() {
			t.Fatalf("while kube-apiserver is down: %s, ready %v", got.since(before), b.loop.Ready())
		}
		if got := clusterStateLines(b.loop.State()); !slices.Equal(got, clusterWantState(want)) {
			t.Fatalf("while kube-apiserver is down the neighbors changed: %q", got)
		}
		select {
		case <-e.ctx.Done():
			t.Fatal("out of time while kube-apiserver is down")
		case <-time.After(50 * time.Millisecond):
		}
	}
	downFor := time.Since(down)
	t2 := time.Now()
	if err := e.kc.Restart(); err != nil {
		t.Fatalf("start kube-apiserver again: %v", err)
	}
	t.Logf("outage: stopping took %v; down %v more, the State polled %d times: unchanged, ready, no effect; "+
		"starting took %v; the agent logged %d \"watch ended with error\" warnings", stopped.Round(time.Millisecond),
		downFor.Round(time.Millisecond), polls, time.Since(t2).Round(time.Millisecond),
		strings.Count(b.logs.String(), "watch ended with error"))
	checkRecovery(b, "outage", "2", t1, before)

	// Positive control: the watches are live for what matters too.
	want[2].pw = pw2
	effs := b.step("Secret tor-md5 rotated after the outage", func() {
		e.putSecret(clusterNS, "tor-md5", map[string]string{clusterKey: pw2, "unused": "2b"})
	}, 64512, want...)
	clusterExpect(t, "a rotation after the outage", effs, "update-peer 127.0.0.10")
	b.alive()
	t.Logf("whole test %v", time.Since(e.started).Round(time.Millisecond))
}

// --- the cluster --------------------------------------------------------

// clusterEnv is a real API server and admin clients for one test.
type clusterEnv struct {
	t       *testing.T
	kc      *kubetest.Cluster
	ctx     context.Context
	cs      kubernetes.Interface
	dyn     dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	started time.Time
}

// clusterStart starts kube-apiserver and etcd (skipped under -short, and
// by kubetest when the binaries are missing: loudly, or a failure under
// CI=true) with opts, installs the CRDs of crdDirs and creates the
// agent's namespace from deploy/namespace.yaml. budget bounds the whole
// test.
func clusterStart(t *testing.T, budget time.Duration, opts []kubetest.Option, crdDirs ...string) *clusterEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("real kube-apiserver and etcd: not in -short")
	}
	started := time.Now()
	kc := kubetest.Start(t, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	t.Cleanup(cancel)
	cfg := kc.RESTConfig()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &clusterEnv{t: t, kc: kc, ctx: ctx, cs: cs, dyn: dyn, started: started,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))}
	for _, d := range crdDirs {
		kc.InstallCRDs(t, d)
	}
	e.applyObjects(e.manifests(filepath.Join(clusterDeploy, "namespace.yaml"))...)
	return e
}

// manifests decodes every object of a YAML file.
func (e *clusterEnv) manifests(path string) []*unstructured.Unstructured {
	e.t.Helper()
	f, err := os.Open(path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			e.t.Fatalf("%s: %v", path, err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

// applyObjects creates each object, or replaces it when it exists.
func (e *clusterEnv) applyObjects(objs ...*unstructured.Unstructured) {
	e.t.Helper()
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			e.mapper.Reset()
			if m, err = e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				e.t.Fatalf("%s %s: %v", gvk.Kind, o.GetName(), err)
			}
		}
		var ri dynamic.ResourceInterface = e.dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = e.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		e.upsert(ri, o)
	}
}

// upsert creates o, or replaces the existing object of its name.
func (e *clusterEnv) upsert(ri dynamic.ResourceInterface, o *unstructured.Unstructured) {
	e.t.Helper()
	err := clientretry.RetryOnConflict(clientretry.DefaultRetry, func() error {
		_, err := ri.Create(e.ctx, o, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		old, err := ri.Get(e.ctx, o.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		o = o.DeepCopy()
		o.SetResourceVersion(old.GetResourceVersion())
		_, err = ri.Update(e.ctx, o, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

func clusterCalicoResource(group, kind string) schema.GroupVersionResource {
	gv, _ := schema.ParseGroupVersion(group)
	return gv.WithResource(strings.ToLower(kind) + "s")
}

// putCalico creates or replaces a cluster-scoped Calico object of group.
func (e *clusterEnv) putCalico(group, kind, name string, spec map[string]any) {
	e.t.Helper()
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group, "kind": kind,
		"metadata": map[string]any{"name": name}, "spec": spec}}
	e.upsert(e.dyn.Resource(clusterCalicoResource(group, kind)), o)
}

func (e *clusterEnv) deleteCalico(group, kind, name string) {
	e.t.Helper()
	if err := e.dyn.Resource(clusterCalicoResource(group, kind)).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("delete %s %s: %v", kind, name, err)
	}
}

// putNode creates a Node with these labels and annotations.
func (e *clusterEnv) putNode(name string, labels, annotations map[string]string) {
	e.t.Helper()
	if labels == nil {
		labels = map[string]string{}
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}
	if _, err := e.cs.CoreV1().Nodes().Create(e.ctx, n, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create Node %s: %v", name, err)
	}
}

// editNode changes a Node (read, edit, update; again on a conflict).
func (e *clusterEnv) editNode(name string, edit func(*corev1.Node)) {
	e.t.Helper()
	err := clientretry.RetryOnConflict(clientretry.DefaultRetry, func() error {
		n, err := e.cs.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		edit(n)
		_, err = e.cs.CoreV1().Nodes().Update(e.ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("edit Node %s: %v", name, err)
	}
}

func (e *clusterEnv) deleteNode(name string) {
	e.t.Helper()
	if err := e.cs.CoreV1().Nodes().Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("delete Node %s: %v", name, err)
	}
}

// putSecret creates or replaces a Secret's data.
func (e *clusterEnv) putSecret(ns, name string, data map[string]string) {
	e.t.Helper()
	bin := map[string][]byte{}
	for k, v := range data {
		bin[k] = []byte(v)
	}
	secrets := e.cs.CoreV1().Secrets(ns)
	err := clientretry.RetryOnConflict(clientretry.DefaultRetry, func() error {
		s, err := secrets.Get(e.ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = secrets.Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: bin}, metav1.CreateOptions{})
			return err
		} else if err != nil {
			return err
		}
		s.Data = bin
		_, err = secrets.Update(e.ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("put Secret %s/%s: %v", ns, name, err)
	}
}

// checkServiceAccount shows what the ServiceAccount of deploy/ may do with
// deploy/rbac.yaml: read the Calico objects, Nodes and the Secrets of its
// namespace; not read Secrets elsewhere, not write.
func (e *clusterEnv) checkServiceAccount(cfg *rest.Config, group, elsewhere string) {
	e.t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	peers := dyn.Resource(clusterCalicoResource(group, "BGPPeer"))
	_, errNodes := cs.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{})
	_, errPeers := peers.List(e.ctx, metav1.ListOptions{})
	_, errHome := cs.CoreV1().Secrets(clusterNS).Get(e.ctx, "tor-md5", metav1.GetOptions{})
	_, errAway := cs.CoreV1().Secrets(elsewhere).Get(e.ctx, "tor-md5", metav1.GetOptions{})
	_, errAll := cs.CoreV1().Secrets("").List(e.ctx, metav1.ListOptions{})
	bogus := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group, "kind": "BGPPeer",
		"metadata": map[string]any{"name": "not-allowed"}, "spec": map[string]any{"peerIP": "127.0.0.99", "asNumber": int64(65099)}}}
	_, errWrite := peers.Create(e.ctx, bogus, metav1.CreateOptions{})
	if errNodes != nil || errPeers != nil || errHome != nil {
		e.t.Fatalf("the ServiceAccount cannot read what it needs: nodes %v, bgppeers %v, secret %s/tor-md5 %v", errNodes, errPeers, clusterNS, errHome)
	}
	if !apierrors.IsForbidden(errAway) || !apierrors.IsForbidden(errAll) || !apierrors.IsForbidden(errWrite) {
		e.t.Fatalf("the ServiceAccount may do more than deploy/rbac.yaml says: secret %s/tor-md5 %v, all secrets %v, create BGPPeer %v",
			elsewhere, errAway, errAll, errWrite)
	}
	e.t.Logf("as system:serviceaccount:%s:%s: nodes, bgppeers and secret %s/tor-md5 readable; secret %s/tor-md5, all secrets and creating a BGPPeer: 403",
		clusterNS, clusterSA, clusterNS, elsewhere)
}

// --- the agent ----------------------------------------------------------

type clusterAgentConfig struct {
	rest      *rest.Config // nil: admin
	group     string
	namespace string // the agent's secrets namespace; "" is the default
	realBGP   bool   // the real GoBGP executor (on 127.0.0.1) instead of an acknowledging fake
}

// clusterAgent is the agent as run.go wires it, minus HTTP and VPP: the
// Kubernetes source feeding the real Loop, whose speaker effects go
// through a counting wrapper to the real GoBGP executor or a fake.
type clusterAgent struct {
	t        *testing.T
	e        *clusterEnv
	loop     *Loop
	speaker  *clusterSpeaker
	watches  *clusterWatches
	seen     *clusterSeen
	bgp      *gobgp.Executor // nil with the fake
	logs     *clusterLogBuf
	started  time.Time
	kubeDone chan struct{}
	kubeErr  error
	stopOnce sync.Once
	stopFn   func()
}

func (e *clusterEnv) startAgent(c clusterAgentConfig) *clusterAgent {
	t := e.t
	t.Helper()
	cfg := c.rest
	if cfg == nil {
		cfg = e.kc.RESTConfig()
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := c.namespace
	if ns == "" {
		ns = state.DefaultNamespace
	}
	a := &clusterAgent{t: t, e: e, logs: &clusterLogBuf{}, seen: &clusterSeen{counts: map[string]int{}},
		kubeDone: make(chan struct{}), started: time.Now()}
	log := slog.New(slog.NewTextHandler(a.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	kube, err := watch.NewKube(watch.KubeConfig{Client: cs, Dynamic: dyn, Discovery: cs.Discovery(),
		Group: c.group, Namespace: ns, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	a.speaker = &clusterSpeaker{}
	if c.realBGP {
		a.bgp = gobgp.New(gobgp.Options{ListenAddresses: []string{clusterAddr}, Logger: log, GoBGPLevel: slog.LevelWarn})
		a.speaker.inner = a.bgp
	}
	a.watches = &clusterWatches{inner: kube}
	a.loop = NewLoop(LoopConfig{Initial: state.New(clusterNode, state.Options{Namespace: ns}), Speaker: a.speaker,
		Secrets: a.watches, Log: log, Journal: 1000, Observer: []func(state.Action){a.seen.observe}})
	ctx, cancel := context.WithCancel(context.Background())
	loopDone, sessDone := make(chan struct{}), make(chan error, 1)
	go func() { a.loop.Run(ctx); close(loopDone) }()
	go func() { a.kubeErr = kube.Run(ctx, a.loop.Dispatch); close(a.kubeDone) }()
	if a.bgp != nil {
		go func() { sessDone <- a.bgp.WatchSessions(ctx, a.loop.Dispatch) }()
	} else {
		close(sessDone)
	}
	a.stopFn = func() {
		cancel()
		<-loopDone
		<-a.kubeDone
		if a.kubeErr != nil {
			t.Errorf("kube source: %v", a.kubeErr)
		}
		if err := <-sessDone; err != nil {
			t.Errorf("WatchSessions: %v", err)
		}
		if a.bgp != nil {
			if err := a.bgp.Close(); err != nil {
				t.Errorf("close the GoBGP executor: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("agent log:\n%s\nspeaker effects:\n%s", a.logs.String(), strings.Join(a.speaker.since(0), "\n"))
		}
	}
	t.Cleanup(a.stop)
	return a
}

// stop ends the agent (also done by a cleanup).
func (a *clusterAgent) stop() { a.stopOnce.Do(a.stopFn) }

// alive fails the test if the kube source returned while it should run.
func (a *clusterAgent) alive() {
	a.t.Helper()
	select {
	case <-a.kubeDone:
		a.t.Fatalf("the kube source returned: %v", a.kubeErr)
	default:
	}
}

// settle returns once everything dispatched so far has been reduced and
// every effect it caused has been handed to the executor and has returned.
// Two markers in turn: when the second is reduced, the step of the first
// (and of everything before it) is complete, its effects queued.
func (a *clusterAgent) settle() {
	a.t.Helper()
	for range 2 {
		n := a.seen.markers()
		a.loop.Dispatch(state.InputProblemsReported{Source: clusterMarker})
		if !clusterPoll(a.e.ctx, clusterWaitMax, func() bool { return a.seen.markers() > n }) {
			a.t.Fatal("the loop never reduced the settle marker")
		}
	}
	if !clusterPoll(a.e.ctx, clusterWaitMax, func() bool { return a.loop.pendingQ.Load() == 0 }) {
		a.t.Fatal("the loop's effects never drained")
	}
}

// clusterNbr is one expected neighbor. pw is the password text from the
// test's Secret; only its fingerprint is compared.
type clusterNbr struct {
	addr   string
	asn    uint32
	local  uint32
	origin string
	pw     string
	wait   bool // held back for its Secret
}

func (n clusterNbr) stateLine() string {
	l := fmt.Sprintf("%s as=%d local=%d %s", n.addr, n.asn, n.local, n.origin)
	if n.pw != "" {
		l += " pw=" + state.NewPassword(n.pw).Fingerprint()
	}
	if n.wait {
		l += " waiting"
	}
	return l
}

func (n clusterNbr) speakerLine() string {
	l := fmt.Sprintf("%s as=%d local=%d", n.addr, n.asn, n.local)
	if n.pw != "" {
		l += " pw=" + state.NewPassword(n.pw).Fingerprint()
	}
	return l
}

func clusterWantState(want []clusterNbr) []string {
	out := []string{}
	for _, n := range want {
		out = append(out, n.stateLine())
	}
	slices.Sort(out)
	return out
}

func clusterWantSpeaker(want []clusterNbr) []string {
	out := []string{}
	for _, n := range want {
		if !n.wait {
			out = append(out, n.speakerLine())
		}
	}
	slices.Sort(out)
	return out
}

// clusterStateLines renders the State's neighbors as stateLine does.
func clusterStateLines(s state.State) []string {
	out := []string{}
	s.Out.Neighbors.Range(func(_ string, n *state.Neighbor) bool {
		l := fmt.Sprintf("%s as=%d local=%d %s", n.Address, n.PeerASN, n.LocalASN, n.Origin)
		if fp := n.Password.Fingerprint(); fp != "" {
			l += " pw=" + fp
		}
		if n.Waiting != "" {
			l += " waiting"
		}
		out = append(out, l)
		return true
	})
	slices.Sort(out)
	return out
}

// speakerLines renders GoBGP's own neighbor list as speakerLine does.
func (a *clusterAgent) speakerLines() ([]string, error) {
	ns, err := a.bgp.Neighbors(a.e.ctx)
	out := []string{}
	for _, n := range ns {
		l := fmt.Sprintf("%s as=%d local=%d", n.Address, n.PeerASN, n.LocalASN)
		if n.Password != "" {
			l += " pw=" + n.Password
		}
		out = append(out, l)
	}
	slices.Sort(out)
	return out, err
}

// clusterSessionsMatch checks that every neighbor has its session in the right
// phase (waiting when held back, else configured or established with the
// current config confirmed by the executor) and that no other session is
// left.
func clusterSessionsMatch(s state.State) (bool, string) {
	ok := s.Out.Sessions.Len() == s.Out.Neighbors.Len()
	var parts []string
	s.Out.Sessions.Range(func(k string, sess *state.Session) bool {
		n, has := s.Out.Neighbors.Get(k)
		switch {
		case !has:
			ok = false
		case n.Waiting != "":
			ok = ok && sess.Phase == state.PhaseWaiting
		default:
			ok = ok && (sess.Phase == state.PhaseConfigured || sess.Phase == state.PhaseEstablished) &&
				sess.Applied != nil && sess.Applied.Equal(n)
		}
		parts = append(parts, fmt.Sprintf("%s %s/%s", sess.Address, sess.Phase, sess.BGP))
		return true
	})
	slices.Sort(parts)
	return ok, strings.Join(parts, ", ")
}

// converge waits until the State (server AS, neighbors, sessions) and, with
// the real executor, GoBGP's neighbor list are want, then settles.
func (a *clusterAgent) converge(what string, serverASN uint32, want ...clusterNbr) {
	a.t.Helper()
	wantState, wantSpeaker := clusterWantState(want), clusterWantSpeaker(want)
	var last string
	ok := clusterPoll(a.e.ctx, clusterWaitMax, func() bool {
		s := a.loop.State()
		gotState := clusterStateLines(s)
		sessOK, sessions := clusterSessionsMatch(s)
		good := a.loop.Ready() && s.Server.ASN == serverASN && slices.Equal(gotState, wantState) && sessOK
		last = fmt.Sprintf("ready %v, server AS %d (want %d)\n  state neighbors %q\n  want            %q\n  sessions %s",
			a.loop.Ready(), s.Server.ASN, serverASN, gotState, wantState, sessions)
		if a.bgp != nil {
			got, err := a.speakerLines()
			good = good && err == nil && slices.Equal(got, wantSpeaker)
			last += fmt.Sprintf("\n  GoBGP neighbors %q (err %v)\n  want            %q", got, err, wantSpeaker)
		}
		return good
	})
	if !ok {
		a.alive()
		a.t.Fatalf("%s: the agent did not follow within %v:\n%s\n  problems %v", what, clusterWaitMax, last, a.problems())
	}
	a.settle()
}

// initial converges on the agent's first lists and logs how long that
// took from its start and what it handed the executor.
func (a *clusterAgent) initial(what string, serverASN uint32, want ...clusterNbr) {
	a.t.Helper()
	a.converge(what, serverASN, want...)
	effs := a.speaker.since(0)
	a.t.Logf("%s: the agent matched %d neighbors %v after its start; %d speaker effects: %s", what, len(want),
		time.Since(a.started).Round(time.Millisecond), len(effs), clusterOrNone(effs))
}

// step makes a change through the API server, waits until the agent
// follows (converge) and returns the speaker effects the change caused.
func (a *clusterAgent) step(what string, change func(), serverASN uint32, want ...clusterNbr) []string {
	a.t.Helper()
	a.settle()
	m := a.speaker.mark()
	t0 := time.Now()
	change()
	a.converge(what, serverASN, want...)
	effs := a.speaker.since(m)
	view := "State"
	if a.bgp != nil {
		view = "State and GoBGP"
	}
	a.t.Logf("%s: %s followed in %v; %d speaker effects: %s", what, view, time.Since(t0).Round(time.Millisecond),
		len(effs), clusterOrNone(effs))
	return effs
}

// stepInputs is step for a change that moves no neighbor: it waits until
// the State's inputs show it (cond), then returns the effects it caused.
func (a *clusterAgent) stepInputs(what string, change func(), cond func(state.State) bool) []string {
	a.t.Helper()
	a.settle()
	m := a.speaker.mark()
	t0 := time.Now()
	change()
	a.waitState(what, cond)
	a.settle()
	effs := a.speaker.since(m)
	a.t.Logf("%s: arrived in %v; %d speaker effects: %s", what, time.Since(t0).Round(time.Millisecond), len(effs), clusterOrNone(effs))
	return effs
}

// waitState waits until cond holds for the State.
func (a *clusterAgent) waitState(what string, cond func(state.State) bool) {
	a.t.Helper()
	if !clusterPoll(a.e.ctx, clusterWaitMax, func() bool { return cond(a.loop.State()) }) {
		a.alive()
		a.t.Fatalf("%s: not in the State within %v; neighbors %q, problems %v", what, clusterWaitMax,
			clusterStateLines(a.loop.State()), a.problems())
	}
}

// same checks that neighbors, sessions and GoBGP's list are still want,
// with the same generations and flaps as at before.
func (a *clusterAgent) same(what string, before clusterSnapshot, want ...clusterNbr) {
	a.t.Helper()
	s := a.loop.State()
	if got := clusterStateLines(s); !slices.Equal(got, clusterWantState(want)) {
		a.t.Errorf("%s: neighbors %q, want %q", what, got, clusterWantState(want))
	}
	if got := clusterSessionGens(s); !maps.Equal(got, before.gens) {
		a.t.Errorf("%s: session generations/flaps %v, before %v", what, got, before.gens)
	}
	if a.bgp != nil {
		if got, err := a.speakerLines(); err != nil || !slices.Equal(got, clusterWantSpeaker(want)) {
			a.t.Errorf("%s: GoBGP neighbors %q (%v), want %q", what, got, err, clusterWantSpeaker(want))
		}
	}
}

func (a *clusterAgent) problems() []state.Problem { return a.loop.State().AllProblems() }

// hasProblem reports whether a problem's reason contains text.
func (a *clusterAgent) hasProblem(text string) bool {
	for _, p := range a.problems() {
		if strings.Contains(p.Reason, text) {
			return true
		}
	}
	return false
}

// clusterSnapshot counts what the agent did up to a moment.
type clusterSnapshot struct {
	effects, watchCalls int
	actions             map[string]int
	gens                map[string]string
}

func (a *clusterAgent) snapshot() clusterSnapshot {
	return clusterSnapshot{effects: a.speaker.mark(), watchCalls: len(a.watches.list()),
		actions: a.seen.snapshot(), gens: clusterSessionGens(a.loop.State())}
}

type clusterDelta struct {
	effects, watchCalls int
	actions             map[string]int
}

func (s clusterSnapshot) since(b clusterSnapshot) clusterDelta {
	d := clusterDelta{effects: s.effects - b.effects, watchCalls: s.watchCalls - b.watchCalls, actions: map[string]int{}}
	for k, v := range s.actions {
		if n := v - b.actions[k]; n != 0 {
			d.actions[k] = n
		}
	}
	return d
}

func (d clusterDelta) String() string {
	keys := slices.Sorted(maps.Keys(d.actions))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, d.actions[k])
	}
	return fmt.Sprintf("%d speaker effects, %d secret watch calls; actions reduced: %s",
		d.effects, d.watchCalls, clusterOrNone(parts))
}

// clusterSessionGens is each session's generation and flap count.
func clusterSessionGens(s state.State) map[string]string {
	out := map[string]string{}
	s.Out.Sessions.Range(func(k string, sess *state.Session) bool {
		out[k] = fmt.Sprintf("gen %d flaps %d", sess.Gen, sess.Flaps)
		return true
	})
	return out
}

// --- wrappers -------------------------------------------------------------

// clusterSpeaker records every effect the loop hands the speaker executor,
// then passes them to the real one, or acknowledges them (the fake).
type clusterSpeaker struct {
	inner effects.Executor
	mu    sync.Mutex
	seen  []string
}

func (s *clusterSpeaker) Execute(ctx context.Context, effs []effects.Effect) []state.Action {
	s.mu.Lock()
	for _, e := range effs {
		s.seen = append(s.seen, e.String())
	}
	s.mu.Unlock()
	if s.inner != nil {
		return s.inner.Execute(ctx, effs)
	}
	return clusterAck(effs)
}

func (s *clusterSpeaker) mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func (s *clusterSpeaker) since(m int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen[m:])
}

// clusterAck is the fake speaker: every effect succeeds, reported as the
// executor contract says (one result per address and generation).
func clusterAck(effs []effects.Effect) []state.Action {
	type key struct {
		addr netip.Addr
		gen  uint64
	}
	var out []state.Action
	done := map[key]bool{}
	for _, e := range effs {
		var gen uint64
		switch e := e.(type) {
		case effects.StartServer:
			out = append(out, state.ServerApplied{Server: e.Server})
			continue
		case effects.RestartServer:
			out = append(out, state.ServerApplied{Server: e.New})
			continue
		case effects.StopServer:
			out = append(out, state.ServerApplied{})
			continue
		case effects.AddPeer:
			gen = e.Gen
		case effects.UpdatePeer:
			gen = e.Gen
		case effects.DeletePeer:
			gen = e.Gen
		case effects.SetPolicy:
			gen = e.Gen
		case effects.DeletePolicy:
			gen = e.Gen
		default:
			continue
		}
		if k := (key{e.Address(), gen}); !done[k] {
			done[k] = true
			out = append(out, state.PeerApplied{Address: k.addr, Gen: gen})
		}
	}
	return out
}

// clusterWatches records the loop's Secret watch calls and passes them on
// to the kube source.
type clusterWatches struct {
	inner SecretWatcher
	mu    sync.Mutex
	calls []string
	on    map[string]bool
}

func (w *clusterWatches) Watch(name string) {
	w.record("watch "+name, name, true)
	w.inner.Watch(name)
}

func (w *clusterWatches) Unwatch(name string) {
	w.record("unwatch "+name, name, false)
	w.inner.Unwatch(name)
}

func (w *clusterWatches) record(call, name string, on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.on == nil {
		w.on = map[string]bool{}
	}
	w.calls = append(w.calls, call)
	w.on[name] = on
}

func (w *clusterWatches) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.calls)
}

func (w *clusterWatches) watching(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.on[name]
}

// clusterSeen counts the actions the loop reduces, by name (a complete
// list by kind too), and the settle markers apart.
type clusterSeen struct {
	mu     sync.Mutex
	counts map[string]int
	marker int
}

func (o *clusterSeen) observe(a state.Action) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch a := a.(type) {
	case state.InputProblemsReported:
		if a.Source == clusterMarker {
			o.marker++
			return
		}
	case state.SourceSynced:
		o.counts["sourceSynced/"+string(a.Kind)]++
		return
	}
	o.counts[a.ActionName()]++
}

func (o *clusterSeen) markers() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.marker
}

func (o *clusterSeen) snapshot() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.counts)
}

// clusterLogBuf collects the agent's log: GoBGP's goroutines outlive the
// test, so nothing goes to t.Log directly.
type clusterLogBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *clusterLogBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *clusterLogBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// --- small helpers ----------------------------------------------------------

// clusterPoll polls cond every 20 ms until it holds (true), limit passes
// or ctx ends (false).
func clusterPoll(ctx context.Context, limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return cond()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// clusterExpect checks that effs are exactly the effects named, each by
// the start of its text ("add-peer 127.0.0.10"), in any order.
func clusterExpect(t *testing.T, what string, effs []string, want ...string) {
	t.Helper()
	if !clusterSameKinds(effs, want...) {
		t.Errorf("%s: speaker effects %q, want exactly %q", what, effs, want)
	}
}

func clusterSameKinds(effs []string, want ...string) bool {
	if len(effs) != len(want) {
		return false
	}
	left := slices.Clone(effs)
	for _, w := range want {
		i := slices.IndexFunc(left, func(e string) bool { return strings.HasPrefix(e, w+" ") || e == w })
		if i < 0 {
			return false
		}
		left = slices.Delete(left, i, i+1)
	}
	return true
}

func clusterNodeLabel(s state.State, node, key string) string {
	n, ok := s.Inputs.Nodes.Get(node)
	if !ok || n.Spec == nil {
		return ""
	}
	return n.Spec.Labels[key]
}

func clusterOrNone(parts []string) string {
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// clusterFreePort is a TCP port free on 127.0.0.1 for the speaker.
func clusterFreePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", net.JoinHostPort(clusterAddr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
