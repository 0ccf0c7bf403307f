package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/watch"
)

func TestPlanFailOnProblems(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"clean", []string{"--node", "node-a", "--fail-on-problems"}, 0, "problems (0)"},
		{"clean-without-flag", []string{"--node", "nosuch"}, 0, "node/nosuch: no Node of this name"},
		{"unknown-node", []string{"--node", "nosuch", "--fail-on-problems"}, 1, "1 problems (--fail-on-problems)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(append([]string{"plan", "--from", "../../examples/lab"}, c.args...), &out, &errb)
			if code != c.code || !strings.Contains(out.String()+errb.String(), c.want) {
				t.Errorf("exit %d, want %d; output lacks %q?\n%s%s", code, c.code, c.want, out.String(), errb.String())
			}
		})
	}
}

// TestPlanTextHasNoGenerations: generation counters are bookkeeping, left
// out of the text; the JSON (a stable interface) keeps the effect strings.
func TestPlanTextHasNoGenerations(t *testing.T) {
	var text, js, errb bytes.Buffer
	if Main([]string{"plan", "--from", "../../examples/lab", "--node", "node-a"}, &text, &errb) != 0 ||
		Main([]string{"plan", "--from", "../../examples/lab", "--node", "node-a", "-o", "json"}, &js, &errb) != 0 {
		t.Fatal(errb.String())
	}
	if strings.Contains(text.String(), "gen=") || !strings.Contains(text.String(), "add-peer 127.0.0.2 as=64512") {
		t.Errorf("text plan:\n%s", text.String())
	}
	if !strings.Contains(js.String(), "gen=") {
		t.Error("the JSON plan lost its effect strings' generations")
	}
	if got := withoutGen("update-peer 10.0.0.2 gen=12 in-place: x"); got != "update-peer 10.0.0.2 in-place: x" {
		t.Errorf("withoutGen = %q", got)
	}
}

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
	var out, errb bytes.Buffer
	if code := Main([]string{"plan", "--kubeconfig", path, "--node", clusterNode, "--secrets-namespace", clusterNS,
		"--fail-on-problems", "-o", "json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	var p Plan
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Neighbors) != 1 || p.Neighbors[0].Address != "127.0.0.10" || !strings.HasPrefix(p.Neighbors[0].Password, "hmac:") {
		t.Errorf("neighbors %+v", p.Neighbors)
	}
	if strings.Contains(out.String()+errb.String(), pw) {
		t.Error("the plan shows the password")
	}
	t.Setenv("KUBECONFIG", path)
	out.Reset()
	errb.Reset()
	code := Main([]string{"plan", "--node", "nosuch", "--secrets-namespace", clusterNS, "--fail-on-problems"}, &out, &errb)
	if code != 1 || !strings.Contains(out.String(), "node/nosuch") {
		t.Errorf("unknown node through $KUBECONFIG: exit %d\n%s%s", code, out.String(), errb.String())
	}
}
