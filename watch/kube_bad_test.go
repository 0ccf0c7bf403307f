package watch

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/peeragent/peeragent/state"
)

func problemOf(obj string) func(state.InputProblemsReported) bool {
	return func(a state.InputProblemsReported) bool { return a.Source == obj }
}

func TestKubeUndecodableInitialList(t *testing.T) {
	cases := []struct {
		name, resource, kind string
		bad                  map[string]any
		kindOf               state.Kind
		reason               string
	}{
		// (an AS number out of the 32-bit range decodes: the reducer
		// reports it on the BGPPeer, TestNewerCalicoFields)
		{name: "peer-as-number-not-a-number", resource: "bgppeers", kind: "BGPPeer", kindOf: state.KindBGPPeer,
			bad: map[string]any{"asNumber": "sixty"}, reason: "decode: invalid AS Number format (sixty)"},
		{name: "peer-ttl-security-too-big", resource: "bgppeers", kind: "BGPPeer", kindOf: state.KindBGPPeer,
			bad: map[string]any{"ttlSecurity": int64(300)}, reason: "invalid spec.ttlSecurity: 300"},
		{name: "config-listen-port-too-big", resource: "bgpconfigurations", kind: "BGPConfiguration",
			kindOf: state.KindBGPConfiguration, bad: map[string]any{"listenPort": int64(70000)},
			reason: "invalid spec.listenPort: 70000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newKubeFakes(nil,
				calicoObject(GroupCRD, tc.kind, "good", "1", map[string]any{}),
				calicoObject(GroupCRD, tc.kind, "bad", "1", tc.bad))
			_, rec := startKube(t, f, GroupCRD, nil)
			obj := string(tc.kindOf) + "/bad"
			synced, _ := nextAction(t, rec, 0, "list", syncedOf(tc.kindOf))
			if got := syncedNames(synced); !slices.Equal(got, []string{"good"}) {
				t.Errorf("listed %v, want [good]", got)
			}
			prob, _ := nextAction(t, rec, 0, "problem", problemOf(obj))
			want := []state.Problem{{Object: obj, Reason: tc.reason}}
			if !slices.Equal(prob.Problems, want) {
				t.Errorf("problems = %+v, want %+v", prob.Problems, want)
			}
		})
	}
}

// undecodablePeerSpec is a BGPPeer spec the v3 type cannot hold.
func undecodablePeerSpec() map[string]any {
	s := testPeerSpec(64514, "10.0.0.2")
	s["ttlSecurity"] = int64(300)
	return s
}

func syncedNames(a state.SourceSynced) []string {
	var out []string
	for _, p := range a.Peers {
		out = append(out, p.Name)
	}
	for _, c := range a.Configs {
		out = append(out, c.Name)
	}
	return out
}

// An undecodable peer is left out with a problem while others keep
// arriving; fixing it clears the problem, breaking it again removes it,
// and deleting it clears the problem without another delete.
func TestKubeUndecodablePeerLifecycle(t *testing.T) {
	f := newKubeFakes(nil, calicoObject(GroupCRD, "BGPPeer", "bad", "1", undecodablePeerSpec()))
	_, rec := startKube(t, f, GroupCRD, nil)
	peers := f.dyn.Resource(calicoGVR(GroupCRD, "bgppeers"))
	_, at := nextAction(t, rec, 0, "problem", func(a state.InputProblemsReported) bool { return len(a.Problems) == 1 })
	at = max(at, waitSynced(t, f, rec))

	mustCall(t)(peers.Create(bgCtx(), calicoObject(GroupCRD, "BGPPeer", "other", "1", testPeerSpec(64513, "10.0.0.3")), metav1.CreateOptions{}))
	_, at = nextAction(t, rec, at, "other peer", func(a state.PeerUpserted) bool { return a.Peer.Name == "other" })

	mustCall(t)(peers.Update(bgCtx(), calicoObject(GroupCRD, "BGPPeer", "bad", "2", testPeerSpec(64514, "10.0.0.2")), metav1.UpdateOptions{}))
	want := []state.Action{state.InputProblemsReported{Source: "bgppeer/bad"},
		state.PeerUpserted{Peer: state.BGPPeer{Name: "bad", PeerIP: "10.0.0.2", ASNumber: 64514}}}
	at = expectActions(t, rec, at, want)

	mustCall(t)(peers.Update(bgCtx(), calicoObject(GroupCRD, "BGPPeer", "bad", "3", undecodablePeerSpec()), metav1.UpdateOptions{}))
	want = []state.Action{problemReport("bgppeer/bad", "invalid spec.ttlSecurity: 300"), state.PeerDeleted{Name: "bad"}}
	at = expectActions(t, rec, at, want)

	if err := peers.Delete(bgCtx(), "bad", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectActions(t, rec, at, []state.Action{state.InputProblemsReported{Source: "bgppeer/bad"}})
}

// expectActions waits for len(want) actions from index at and compares them.
func expectActions(t *testing.T, rec *actionRecorder, at int, want []state.Action) int {
	t.Helper()
	rec.waitFor(t, at+len(want)-1, "actions", func(state.Action) bool { return true })
	got := rec.since(at)[:len(want)]
	if describeActions(got) != describeActions(want) {
		t.Fatalf("got %s\nwant %s", describeActions(got), describeActions(want))
	}
	return at + len(want)
}

// Tombstones (DeletedFinalStateUnknown) are unwrapped, with or without
// their last object; an undecodable object's tombstone clears its problem.
func TestKubeStoreTombstone(t *testing.T) {
	good := calicoObject(GroupCRD, "BGPPeer", "p1", "1", testPeerSpec(64513, "10.0.0.1"))
	bad := calicoObject(GroupCRD, "BGPPeer", "bad", "1", undecodablePeerSpec())
	cases := []struct {
		name string
		tomb cache.DeletedFinalStateUnknown
		want []state.Action
	}{
		{name: "tombstone-with-object", tomb: cache.DeletedFinalStateUnknown{Key: "p1", Obj: good},
			want: []state.Action{state.PeerDeleted{Name: "p1"}}},
		{name: "tombstone-with-key-only", tomb: cache.DeletedFinalStateUnknown{Key: "p1"},
			want: []state.Action{state.PeerDeleted{Name: "p1"}}},
		{name: "tombstone-of-undecodable-object", tomb: cache.DeletedFinalStateUnknown{Key: "bad", Obj: bad},
			want: []state.Action{state.InputProblemsReported{Source: "bgppeer/bad"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := newActionRecorder()
			s := newKindStore(peerCodec(), rec.dispatch, discardLogger())
			if err := s.Replace([]any{good.DeepCopy(), bad.DeepCopy()}, "1"); err != nil {
				t.Fatal(err)
			}
			at := rec.mark()
			if err := s.Delete(tc.tomb); err != nil {
				t.Fatal(err)
			}
			if got := rec.since(at); describeActions(got) != describeActions(tc.want) {
				t.Errorf("got %s\nwant %s", describeActions(got), describeActions(tc.want))
			}
		})
	}
}

// The store drops what carries no news: an unchanged resourceVersion, an
// update that converts to the same value; a relist is always one action.
func TestKubeStoreDropsUnchanged(t *testing.T) {
	rec := newActionRecorder()
	s := newKindStore(nodeCodec(), rec.dispatch, discardLogger())
	n1 := testNode("n1", "1", map[string]string{"a": "1"}, "10.0.0.1/24")
	steps := []struct {
		name string
		do   func() error
		want []state.Action
	}{
		{"list", func() error { return s.Replace([]any{n1}, "1") }, []state.Action{
			state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{Node(n1)}}}},
		{"same-resource-version", func() error {
			return s.Update(testNode("n1", "1", map[string]string{"a": "2"}, "10.0.0.1/24"))
		}, nil},
		{"status-only", func() error {
			return s.Update(withNodeStatus(testNode("n1", "2", map[string]string{"a": "1"}, "10.0.0.1/24")))
		}, nil},
		{"label-change", func() error { return s.Update(testNode("n1", "3", map[string]string{"a": "3"}, "10.0.0.1/24")) },
			[]state.Action{state.NodeUpserted{Node: Node(testNode("n1", "", map[string]string{"a": "3"}, "10.0.0.1/24"))}}},
		{"identical-relist", func() error {
			return s.Replace([]any{testNode("n1", "3", map[string]string{"a": "3"}, "10.0.0.1/24")}, "3")
		},
			[]state.Action{state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{Node(testNode("n1", "", map[string]string{"a": "3"}, "10.0.0.1/24"))}}}},
		{"resync", s.Resync, nil},
	}
	for _, st := range steps {
		at := rec.mark()
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := rec.since(at); describeActions(got) != describeActions(st.want) {
			t.Errorf("%s: got %s\nwant %s", st.name, describeActions(got), describeActions(st.want))
		}
	}
}
