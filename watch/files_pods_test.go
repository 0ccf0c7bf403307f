package watch

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/peeragent/peeragent/state"
)

// podManifests: Pods of node-a (one without a namespace, one host-network,
// one in a v1 List as `kubectl get pods -A -o yaml` writes) and of node-b,
// and one not scheduled.
var podManifests = map[string]string{
	"pods.yaml": `apiVersion: v1
kind: Pod
metadata: {name: p1, namespace: web}
spec: {nodeName: node-a, containers: [{name: c, image: x}]}
status: {phase: Running, podIP: 10.244.1.5, podIPs: [{ip: 10.244.1.5}, {ip: "fd00::5"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: p0}
spec: {nodeName: node-a}
status: {phase: Pending, podIP: 10.244.1.6}
---
apiVersion: v1
kind: Pod
metadata: {name: p1-other, namespace: web}
spec: {nodeName: node-b}
status: {phase: Running, podIPs: [{ip: 10.244.2.5}]}
---
apiVersion: v1
kind: Pod
metadata: {name: unscheduled, namespace: web}
status: {phase: Pending}
`,
	"list.yaml": `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: host, namespace: kube-system}
  spec: {nodeName: node-a, hostNetwork: true}
  status: {phase: Running, podIPs: [{ip: 192.0.2.10}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: p2-other, namespace: web}
  spec: {nodeName: node-b}
  status: {phase: Running, podIPs: [{ip: 10.244.2.6}]}
`,
}

var nodeAPods = []state.Pod{
	{Namespace: "default", Name: "p0", Phase: "Pending", PodIPs: []string{"10.244.1.6"}},
	{Namespace: "kube-system", Name: "host", HostNetwork: true, Phase: "Running", PodIPs: []string{"192.0.2.10"}},
	{Namespace: "web", Name: "p1", Phase: "Running", PodIPs: []string{"10.244.1.5", "fd00::5"}},
}

// TestLoadDirPods: the manifest directory reads the Pods of the agent's
// node only (docs/routes.md "Amendment to §1"), the fields of §8.1 rule 3,
// keyed NAMESPACE/NAME; other nodes' Pods are skipped without a problem;
// with no node, no Pod is read.
func TestLoadDirPods(t *testing.T) {
	dir := t.TempDir()
	writeManifests(t, dir, podManifests)
	got, probs := LoadDirOn(dir, state.DefaultNamespace, "node-a")
	if len(probs) != 0 {
		t.Errorf("problems: %v", probs)
	}
	if d := cmp.Diff(nodeAPods, got.Pods, fileCmp); d != "" {
		t.Errorf("pods (-want +got):\n%s", d)
	}
	if got, _ := LoadDirOn(dir, state.DefaultNamespace, "node-c"); len(got.Pods) != 0 {
		t.Errorf("pods of node-c: %+v", got.Pods)
	}
	if got, _ := LoadDir(dir); len(got.Pods) != 0 {
		t.Errorf("pods with no node: %+v", got.Pods)
	}
}

// TestDirPods: the live source with Node set dispatches this node's Pods
// in its pod SourceSynced, and a Pod of another node added later changes
// nothing.
func TestDirPods(t *testing.T) {
	p := &pollRig{t: t, dir: t.TempDir(), clock: time.Unix(1e9, 0)}
	writeManifests(t, p.dir, podManifests)
	d := NewDir(p.dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	d.Node = "node-a"
	p.r = newDirReload(d, func(a state.Action) { p.got = append(p.got, a) })
	p.r.now = func() time.Time { return p.clock }
	var pods *state.SourceSynced
	for _, a := range p.poll(2) {
		if s, ok := a.(state.SourceSynced); ok && s.Kind == state.KindPod {
			pods = &s
		}
	}
	if pods == nil {
		t.Fatal("no pod SourceSynced")
	}
	if d := cmp.Diff(nodeAPods, pods.Pods, fileCmp); d != "" {
		t.Errorf("pods (-want +got):\n%s", d)
	}
	writeManifests(t, p.dir, map[string]string{"more.yaml": `apiVersion: v1
kind: Pod
metadata: {name: p3-other, namespace: web}
spec: {nodeName: node-b}
status: {phase: Running, podIPs: [{ip: 10.244.2.7}]}
`})
	if got := p.poll(3); len(got) != 0 {
		t.Errorf("another node's Pod dispatched %s", describeActions(got))
	}
}
