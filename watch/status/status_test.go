package status

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v3 "github.com/projectcalico/api/pkg/apis/projectcalico/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/record"

	"github.com/peeragent/peeragent/internal/testrig/wait"
	"github.com/peeragent/peeragent/state"
)

// testState is a synced State of node n1: a mesh neighbor established, a
// node-scoped BGPPeer's neighbor waiting, a global one, and an IPv6 one.
func testState() state.State {
	s := state.New("n1", state.Options{})
	for _, k := range state.SyncedKinds {
		s.Synced[k] = true
	}
	s.Server = state.Server{ASN: 64512, RouterID: netip.MustParseAddr("10.0.0.1")}
	since := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	add := func(addr, origin, bgp string) {
		a := netip.MustParseAddr(addr)
		k := state.AddrKey(a)
		s.Out.Neighbors = s.Out.Neighbors.Set(k, &state.Neighbor{Address: a, Origin: origin})
		if bgp != "" {
			s.Out.Sessions = s.Out.Sessions.Set(k, &state.Session{Address: a, BGP: bgp, Since: since})
		}
	}
	add("10.0.0.2", "mesh", "established")
	add("10.0.0.10", "bgppeer/tor", "")
	add("10.0.0.9", "bgppeer/rr", "active")
	add("fd00::2", "reverse/edge", "openconfirm")
	s.Inputs.Peers = s.Inputs.Peers.Set("tor", &state.PeerEntry{Spec: &state.BGPPeer{Name: "tor", Node: "n1"}})
	s.Inputs.Peers = s.Inputs.Peers.Set("rr", &state.PeerEntry{Spec: &state.BGPPeer{Name: "rr"}})
	return s
}

func TestDesired(t *testing.T) {
	got := Desired(testState(), []v3.NodeStatusClassType{v3.NodeStatusClassTypeAgent, v3.NodeStatusClassTypeBGP}, "v1.2.3")
	d := v3.BGPDaemonStatus{State: v3.BGPDaemonStateReady, Version: "v1.2.3", RouterID: "10.0.0.1"}
	since := "2025-01-02T03:04:05Z"
	want := v3.CalicoNodeStatusStatus{
		Agent: v3.CalicoNodeAgentStatus{BIRDV4: d, BIRDV6: d},
		BGP: v3.CalicoNodeBGPStatus{NumberEstablishedV4: 1, NumberNotEstablishedV4: 2, NumberNotEstablishedV6: 1,
			PeersV4: []v3.CalicoNodePeer{
				{PeerIP: "10.0.0.2", Type: v3.BGPPeerTypeNodeMesh, State: v3.BGPSessionStateEstablished, Since: since},
				{PeerIP: "10.0.0.9", Type: v3.BGPPeerTypeGlobalPeer, State: v3.BGPSessionStateActive, Since: since},
				{PeerIP: "10.0.0.10", Type: v3.BGPPeerTypeNodePeer, State: v3.BGPSessionStateIdle},
			},
			PeersV6: []v3.CalicoNodePeer{{PeerIP: "fd00::2", Type: v3.BGPPeerTypeNodePeer, State: v3.BGPSessionStateOpenConfirm, Since: since}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Desired (-want +got):\n%s", diff)
	}
	if only := Desired(testState(), []v3.NodeStatusClassType{v3.NodeStatusClassTypeBGP}, "v"); only.Agent != (v3.CalicoNodeAgentStatus{}) {
		t.Errorf("class BGP alone filled the agent status: %+v", only.Agent)
	}
}

func TestEventLog(t *testing.T) {
	rec := record.NewFakeRecorder(100)
	e := newEventLog(rec, "crd.projectcalico.org/v1", time.Minute)
	t0 := time.Unix(1000, 0)
	missing := state.Problem{Object: "bgppeer/tor", Reason: "neighbor 10.0.0.10 waiting for secret ns/s key k"}
	filter := state.Problem{Object: "bgpfilter/f", Reason: "invalid; keeping"}
	secret := state.Problem{Object: "secret/ns/s", Reason: "list forbidden"}
	other := state.Problem{Object: "mesh", Reason: "not an object Events go on"}
	steps := []struct {
		name     string
		at       time.Duration
		problems []state.Problem
		want     []string
		next     time.Duration // 0: none due
	}{
		{"appear", 0, []state.Problem{filter, missing, secret, other}, []string{
			"Warning Problem invalid; keeping", "Warning Problem " + missing.Reason, "Warning Problem list forbidden"}, 0},
		{"same-again-is-deduplicated", time.Second, []state.Problem{filter, missing, secret, other}, nil, 0},
		{"cleared-within-the-gap-waits", 2 * time.Second, []state.Problem{filter, secret}, nil, time.Minute},
		{"and-comes-when-due", time.Minute, []state.Problem{filter, secret}, []string{"Normal ProblemCleared cleared: " + missing.Reason}, 0},
		{"flap-within-the-gap-is-nothing", time.Minute + time.Second, []state.Problem{filter, missing, secret}, nil, 2 * time.Minute},
		{"flapped-back", time.Minute + 2*time.Second, []state.Problem{filter, secret}, nil, 0},
	}
	for _, st := range steps {
		next := e.step(t0.Add(st.at), st.problems)
		var got []string
		for len(rec.Events) > 0 {
			got = append(got, <-rec.Events)
		}
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Errorf("%s: events (-want +got):\n%s", st.name, diff)
		}
		wantNext := time.Time{}
		if st.next != 0 {
			wantNext = t0.Add(st.next)
		}
		if !next.Equal(wantNext) {
			t.Errorf("%s: next due %v, want %v", st.name, next, wantNext)
		}
	}
}

func TestObjectRef(t *testing.T) {
	for _, c := range []struct{ obj, want string }{
		{"bgppeer/a", "projectcalico.org/v3 BGPPeer /a"},
		{"bgpfilter/f", "projectcalico.org/v3 BGPFilter /f"},
		{"secret/ns/s", "v1 Secret ns/s"},
		{"secret/s", ""}, {"node/n1", ""}, {"mesh", ""}, {"bgppeer/", ""},
	} {
		ref, ok := objectRef(c.obj, "projectcalico.org/v3")
		got := ""
		if ok {
			got = ref.APIVersion + " " + ref.Kind + " " + ref.Namespace + "/" + ref.Name
		}
		if got != c.want {
			t.Errorf("objectRef(%q) = %q, want %q", c.obj, got, c.want)
		}
	}
}

var cnsGVR = schema.GroupVersionResource{Group: "crd.projectcalico.org", Version: "v1", Resource: "caliconodestatuses"}

func cnsObject(name, node string, period *uint32) *unstructured.Unstructured {
	spec := map[string]any{"node": node, "classes": []any{"Agent", "BGP"}}
	if period != nil {
		spec["updatePeriodSeconds"] = int64(*period)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "crd.projectcalico.org/v1", "kind": "CalicoNodeStatus",
		"metadata": map[string]any{"name": name, "resourceVersion": "1"}, "spec": spec}}
}

func TestReporterWritesThisNodesStatusOnlyWhenChanged(t *testing.T) {
	zero := uint32(0)
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{cnsGVR: "CalicoNodeStatusList"},
		cnsObject("mine", "n1", nil), cnsObject("theirs", "n2", nil), cnsObject("paused", "n1", &zero))
	r, err := New(Config{Dynamic: dyn, Group: "crd.projectcalico.org/v1", Node: "n1", Recorder: record.NewFakeRecorder(10),
		Version: "v1", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	r.Observe(testState())
	want := Desired(testState(), []v3.NodeStatusClassType{v3.NodeStatusClassTypeAgent, v3.NodeStatusClassTypeBGP}, "v1")
	var got v3.CalicoNodeStatusStatus
	wait.Until(t, "mine's status", 10*time.Second, func() bool {
		var ok bool
		got, ok = readStatus(t, dyn, "mine")
		return ok && sameStatus(got, want)
	})
	if got.LastUpdated.IsZero() {
		t.Error("lastUpdated not set")
	}
	writes := countUpdates(dyn)
	r.Observe(testState()) // the same again: nothing to write
	r.Observe(testState())
	for _, name := range []string{"theirs", "paused"} {
		if got, ok := readStatus(t, dyn, name); ok && !sameStatus(got, v3.CalicoNodeStatusStatus{}) {
			t.Errorf("%s was written: %+v", name, got)
		}
	}
	// A changed State is held back by the update period (10 s by default).
	s := testState()
	s.Server.RouterID = netip.MustParseAddr("10.0.0.99")
	r.Observe(s)
	if n := countUpdates(dyn); n != writes {
		t.Errorf("%d writes after the same State again, want %d", n, writes)
	}
}

func readStatus(t *testing.T, dyn *dynfake.FakeDynamicClient, name string) (v3.CalicoNodeStatusStatus, bool) {
	t.Helper()
	u, err := dyn.Resource(cnsGVR).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cns v3.CalicoNodeStatus
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cns); err != nil {
		t.Fatal(err)
	}
	_, has := u.Object["status"]
	return cns.Status, has
}

func countUpdates(dyn *dynfake.FakeDynamicClient) int {
	n := 0
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "update" {
			n++
		}
	}
	return n
}
