package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/watch"
)

// TestClusterReportsStatus: the agent's source and its status reporter
// (watch/status, as run makes it for --report-status: Events through its
// own recorder) against the real API server (run's wiring of the two over
// one set of clients: cmd/peeragent TestStatusReporterWiring). A
// CalicoNodeStatus for this node gets the BGPPeer's neighbor in
// status.bgp.peersV4; the BGPPeer, whose password Secret is missing, gets a
// Warning Event, and a Normal one once the Secret exists; no Event or
// status holds the password.
func TestClusterReportsStatus(t *testing.T) {
	e := clusterStart(t, 60*time.Second, nil, clusterCRDs)
	group := watch.GroupCRD
	e.putNode(clusterNode, nil, map[string]string{watch.AnnotationIPv4: "127.0.0.1/8"})
	e.putCalico(group, "BGPConfiguration", "default", map[string]any{"asNumber": int64(64512), "nodeToNodeMeshEnabled": false})
	e.putCalico(group, "CalicoNodeStatus", "node-a-status", map[string]any{"node": clusterNode,
		"classes": []any{"Agent", "BGP"}, "updatePeriodSeconds": int64(1)})
	e.putCalico(group, "BGPPeer", "tor", map[string]any{"peerIP": "10.0.0.10", "asNumber": int64(64513),
		"password": map[string]any{"secretKeyRef": map[string]any{"name": "tor-md5", "key": "password"}}})

	rep := e.startReporter(group)
	a := e.startAgent(clusterAgentConfig{group: group, published: []func(state.State){rep.Observe}})
	defer a.stop()

	status, ok := e.waitNodeStatus(group, "node-a-status", clusterWaitMax, func(status map[string]any) bool {
		j, _ := json.Marshal(status["bgp"])
		return strings.Contains(string(j), `"peerIP":"10.0.0.10"`)
	})
	if !ok {
		t.Fatalf("CalicoNodeStatus status %v; problems %v", status, a.problems())
	}
	j, _ := json.MarshalIndent(status, "", "  ")
	t.Logf("CalicoNodeStatus node-a-status status read back:\n%s", j)
	bgp := status["bgp"].(map[string]any)
	peer := bgp["peersV4"].([]any)[0].(map[string]any)
	if peer["type"] != "GlobalPeer" || peer["state"] != "Idle" || bgp["numberNotEstablishedV4"] != int64(1) {
		t.Errorf("peersV4[0] %v, numberNotEstablishedV4 %v: want a GlobalPeer, Idle, 1", peer, bgp["numberNotEstablishedV4"])
	}

	warning := waitEvent(t, e, "Warning", "Problem")
	if !strings.Contains(warning.Message, "waiting for secret "+clusterNS+"/tor-md5 key password") {
		t.Errorf("Warning Event message %q", warning.Message)
	}
	e.putSecret(clusterNS, "tor-md5", map[string]string{"password": "s3cr3t-value"})
	cleared := waitEvent(t, e, "Normal", "ProblemCleared")
	for _, ev := range []corev1.Event{warning, cleared} {
		t.Logf("Event read back: namespace %s involvedObject %s %s %s type %s reason %s count %d source %s/%s message %q",
			ev.Namespace, ev.InvolvedObject.APIVersion, ev.InvolvedObject.Kind, ev.InvolvedObject.Name,
			ev.Type, ev.Reason, ev.Count, ev.Source.Component, ev.Source.Host, ev.Message)
		if strings.Contains(ev.Message, "s3cr3t-value") {
			t.Errorf("an Event holds the password: %q", ev.Message)
		}
	}
}

// waitEvent waits for an Event of this type and reason on the BGPPeer tor.
func waitEvent(t *testing.T, e *clusterEnv, typ, reason string) corev1.Event {
	t.Helper()
	var got corev1.Event
	var seen []string
	if !clusterPoll(e.ctx, clusterWaitMax, func() bool {
		l, err := e.cs.CoreV1().Events("default").List(e.ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=BGPPeer,involvedObject.name=tor"})
		if err != nil {
			return false
		}
		seen = seen[:0]
		for _, ev := range l.Items {
			seen = append(seen, ev.Type+" "+ev.Reason+" "+ev.Message)
			if ev.Type == typ && ev.Reason == reason {
				got = ev
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no %s %s Event on BGPPeer tor; events %q", typ, reason, seen)
	}
	return got
}
