package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/watch"
)

// TestPlanFromCluster plans against a real API server: through
// --kubeconfig and through $KUBECONFIG, with the password Secret read.
func TestPlanFromCluster(t *testing.T) {
	e := clusterStart(t, 60*time.Second, nil, clusterCRDs)
	group := watch.GroupCRD
	const pw = "plan-cluster-secret"
	e.putSecret(clusterNS, "tor-md5", map[string]string{clusterKey: pw})
	e.putNode(clusterNode, nil, map[string]string{watch.AnnotationIPv4: "127.0.0.1/8"})
	e.putCalico(group, "BGPConfiguration", "default", map[string]any{"nodeToNodeMeshEnabled": false})
	e.putCalico(group, "BGPPeer", "tor-a", map[string]any{"node": clusterNode, "peerIP": "127.0.0.10", "asNumber": int64(65010),
		"password": map[string]any{"secretKeyRef": map[string]any{"name": "tor-md5", "key": clusterKey}}})
	path, err := e.kc.WriteKubeconfig("plan", e.kc.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	bin := buildAgent(t)
	code, out, errb := runAgentCmd(t, bin, nil, "plan", "--kubeconfig", path, "--node", clusterNode, "--secrets-namespace", clusterNS,
		"--fail-on-problems", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errb)
	}
	var p struct {
		Neighbors []struct{ Address, Password string }
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Neighbors) != 1 || p.Neighbors[0].Address != "127.0.0.10" || !strings.HasPrefix(p.Neighbors[0].Password, "hmac:") {
		t.Errorf("neighbors %+v", p.Neighbors)
	}
	if strings.Contains(out+errb, pw) {
		t.Error("the plan shows the password")
	}
	code, out, errb = runAgentCmd(t, bin, []string{"KUBECONFIG=" + path}, "plan", "--node", "nosuch", "--secrets-namespace", clusterNS, "--fail-on-problems")
	if code != 1 || !strings.Contains(out, "node/nosuch") {
		t.Errorf("unknown node through $KUBECONFIG: exit %d\n%s%s", code, out, errb)
	}
}
