package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/watch"
)

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
	e.applyObjects(e.manifests(filepath.Join(clusterDeploy, "base", "serviceaccount.yaml"))...)
	rbac := e.manifests(filepath.Join(clusterDeploy, "base", "rbac.yaml"))
	e.applyObjects(rbac...)
	e.applyObjects(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": elsewhere}}})
	e.putSecret(clusterNS, clusterGrantedSecret, map[string]string{clusterKey: pwHome})
	e.putSecret(elsewhere, clusterGrantedSecret, map[string]string{clusterKey: pwElsewhere})
	e.putNode(clusterNode, nil, map[string]string{watch.AnnotationIPv4: "127.0.0.1/8"})
	e.putNode("node-b", nil, map[string]string{watch.AnnotationIPv4: "127.0.0.2/8"})
	e.putCalico(group, "BGPConfiguration", "default", map[string]any{"nodeToNodeMeshEnabled": false})
	e.putCalico(group, "BGPPeer", "tor-a", map[string]any{"node": clusterNode, "peerIP": "127.0.0.10", "asNumber": int64(65010),
		"password": map[string]any{"secretKeyRef": map[string]any{"name": clusterGrantedSecret, "key": clusterKey}}})
	e.putCalico(group, "BGPPeer", "tor-b", map[string]any{"peerIP": "127.0.0.11", "asNumber": int64(65011)})

	sa := e.kc.ConfigFor(clusterAgentNS, clusterSA)
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
	forbidden := "secret/" + elsewhere + "/" + clusterGrantedSecret
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
	// The refusal names the grant that is missing.
	if grant := `grant get, list, watch of secrets resourceNames ["` + clusterGrantedSecret + `"] in namespace "` + elsewhere + `"`; !strings.Contains(refusal.Reason, grant) {
		t.Errorf("the refusal %q does not name the grant %q", refusal.Reason, grant)
	}
	if !b.hasProblem("waiting for secret " + elsewhere + "/" + clusterGrantedSecret + " key " + clusterKey) {
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
	clusterExpect(t, "another neighbor added while the Secret is refused", effs, "set-policy 127.0.0.12", "add-peer 127.0.0.12")
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
	clusterExpect(t, "the refused Secret readable at last", effs, "set-policy 127.0.0.10", "add-peer 127.0.0.10")
	if ps := b.problems(); len(ps) != 0 {
		t.Errorf("problems left after the grant: %v", ps)
	}
	b.alive()

	// A peer whose Secret the Role does not name: refused, with the grant
	// it lacks; `peeragent rbac` prints the Role for every referenced
	// Secret, and once it is applied the neighbor comes in.
	const pwD = "cluster-md5-d"
	e.putSecret(elsewhere, "tor-d-md5", map[string]string{clusterKey: pwD})
	torDWait := clusterNbr{addr: "127.0.0.13", asn: 65014, local: 64512, origin: "bgppeer/tor-d", wait: true}
	b.step("BGPPeer tor-d with a Secret the Role does not name", func() {
		e.putCalico(group, "BGPPeer", "tor-d", map[string]any{"peerIP": "127.0.0.13", "asNumber": int64(65014),
			"password": map[string]any{"secretKeyRef": map[string]any{"name": "tor-d-md5", "key": clusterKey}}})
	}, 64512, torA, torB, torC, torDWait)
	grantD := `grant get, list, watch of secrets resourceNames ["tor-d-md5"] in namespace "` + elsewhere + `"`
	if !clusterPoll(e.ctx, clusterWaitMax, func() bool { return b.hasProblem(grantD) }) {
		t.Fatalf("no problem naming %q: %v", grantD, b.problems())
	}
	admin, err := e.kc.WriteKubeconfig("admin", e.kc.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runAgentCmd(t, buildAgent(t), nil, "rbac", "--kubeconfig", admin, "--secrets-namespace", elsewhere)
	if code != 0 {
		t.Fatalf("peeragent rbac: exit %d\n%s", code, errOut)
	}
	t.Logf("peeragent rbac --secrets-namespace %s:\n%s", elsewhere, out)
	if !strings.Contains(out, "- "+clusterGrantedSecret+"\n") || !strings.Contains(out, "- tor-d-md5\n") {
		t.Errorf("peeragent rbac does not name both referenced Secrets:\n%s", out)
	}
	printed := e.manifestsFrom(out)
	torD := clusterNbr{addr: "127.0.0.13", asn: 65014, local: 64512, origin: "bgppeer/tor-d", pw: pwD}
	effs = b.step("peeragent rbac | kubectl apply -f -", func() { e.applyObjects(printed...) }, 64512, torA, torB, torC, torD)
	clusterExpect(t, "the Secret granted by peeragent rbac", effs, "set-policy 127.0.0.13", "add-peer 127.0.0.13")
	if ps := b.problems(); len(ps) != 0 {
		t.Errorf("problems left after peeragent rbac's grant: %v", ps)
	}
	t.Logf("whole test %v", time.Since(e.started).Round(time.Millisecond))
}
