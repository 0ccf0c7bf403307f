package watch

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kwatch "k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/peeragent/peeragent/state"
)

func withNodeStatus(n *corev1.Node) *corev1.Node {
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	return n
}

// Nodes: add, label update, a status-only update (no action), delete.
func TestKubeNodes(t *testing.T) {
	f := newKubeFakes([]runtime.Object{testNode("n1", "1", map[string]string{"rack": "a"}, "10.0.0.1/24")})
	_, rec := startKube(t, f, GroupCRD, nil)
	nodes := f.client.CoreV1().Nodes()
	synced, _ := nextAction(t, rec, 0, "node list", syncedOf(state.KindNode))
	at := waitSynced(t, f, rec)
	if len(synced.Nodes) != 1 || synced.Nodes[0].IPv4Address != "10.0.0.1/24" || synced.Nodes[0].Labels["rack"] != "a" {
		t.Fatalf("listed %+v", synced.Nodes)
	}
	mustCall(t)(nodes.Create(bgCtx(), testNode("n2", "1", nil, "10.0.0.2/24"), metav1.CreateOptions{}))
	_, at = nextAction(t, rec, at, "n2 added", func(a state.NodeUpserted) bool { return a.Node.Name == "n2" })

	mustCall(t)(nodes.Update(bgCtx(), testNode("n1", "2", map[string]string{"rack": "b"}, "10.0.0.1/24"), metav1.UpdateOptions{}))
	_, at = nextAction(t, rec, at, "n1 relabelled", func(a state.NodeUpserted) bool { return a.Node.Labels["rack"] == "b" })

	mustCall(t)(nodes.UpdateStatus(bgCtx(), withNodeStatus(testNode("n1", "3", map[string]string{"rack": "b"}, "10.0.0.1/24")), metav1.UpdateOptions{}))
	mustCall(t)(nodes.Update(bgCtx(), testNode("n2", "2", map[string]string{"rack": "c"}, "10.0.0.2/24"), metav1.UpdateOptions{}))
	upd, at := nextAction[state.NodeUpserted](t, rec, at, "n2 relabelled", nil)
	if upd.Node.Name != "n2" {
		t.Fatalf("status-only update of n1 produced %+v", upd)
	}
	if err := nodes.Delete(bgCtx(), "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nextAction(t, rec, at, "n1 deleted", func(a state.NodeDeleted) bool { return a.Name == "n1" })
}

// tapWatches makes every watch of resource a fake watcher the test
// controls and that the tracker does not feed, so changes made meanwhile
// are only seen by the next list; stopping it makes the reflector relist.
func tapWatches(f *k8stesting.Fake, resource string) <-chan *kwatch.RaceFreeFakeWatcher {
	ch := make(chan *kwatch.RaceFreeFakeWatcher, 16)
	f.PrependWatchReactor(resource, func(k8stesting.Action) (bool, kwatch.Interface, error) {
		w := kwatch.NewRaceFreeFake()
		ch <- w
		return true, w, nil
	})
	return ch
}

// A relist (the watch closes, changes were missed) is one SourceSynced
// with the full list, nothing else; an identical relist is one too.
func TestKubeRelist(t *testing.T) {
	cases := []relistCase{ // change adds c, deletes a
		{name: "nodes", kind: state.KindNode,
			tap: func(f kubeFakes) <-chan *kwatch.RaceFreeFakeWatcher { return tapWatches(&f.client.Fake, "nodes") },
			change: func(t *testing.T, f kubeFakes) {
				mustCall(t)(f.client.CoreV1().Nodes().Create(bgCtx(), testNode("c", "1", nil, ""), metav1.CreateOptions{}))
				mustCall(t)(nil, f.client.CoreV1().Nodes().Delete(bgCtx(), "a", metav1.DeleteOptions{}))
			},
			names: func(a state.SourceSynced) []string { return keys(state.NodeInput, a.Nodes) }},
		{name: "bgppeers", kind: state.KindBGPPeer,
			tap: func(f kubeFakes) <-chan *kwatch.RaceFreeFakeWatcher { return tapWatches(&f.dyn.Fake, "bgppeers") },
			change: func(t *testing.T, f kubeFakes) {
				peers := f.dyn.Resource(calicoGVR(GroupCRD, "bgppeers"))
				mustCall(t)(peers.Create(bgCtx(), calicoObject(GroupCRD, "BGPPeer", "c", "1", testPeerSpec(64513, "10.0.0.3")), metav1.CreateOptions{}))
				mustCall(t)(nil, peers.Delete(bgCtx(), "a", metav1.DeleteOptions{}))
			},
			names: func(a state.SourceSynced) []string { return keys(state.PeerInput, a.Peers) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newKubeFakes([]runtime.Object{testNode("a", "1", nil, ""), testNode("b", "1", nil, "")},
				calicoObject(GroupCRD, "BGPPeer", "a", "1", testPeerSpec(64513, "10.0.0.1")),
				calicoObject(GroupCRD, "BGPPeer", "b", "1", testPeerSpec(64513, "10.0.0.2")))
			tc.check(t, f)
		})
	}
}

// relistCase is a kind whose relist a test checks: tap takes over its
// watches, change (made while no watch feeds the store) turns the first
// list, a and b, into b and c, names are the names in a SourceSynced of
// the kind.
type relistCase struct {
	name   string
	kind   state.Kind
	tap    func(f kubeFakes) <-chan *kwatch.RaceFreeFakeWatcher
	change func(t *testing.T, f kubeFakes)
	names  func(state.SourceSynced) []string
}

// check starts the watcher on f and stops its watch twice, after a change
// and with none: each relist is one SourceSynced holding b and c.
func (tc relistCase) check(t *testing.T, f kubeFakes) {
	t.Helper()
	watches := tc.tap(f)
	_, rec := startKube(t, f, GroupCRD, nil)
	first, _ := nextAction(t, rec, 0, "first list", syncedOf(tc.kind))
	waitLists(t, rec)
	if got := tc.names(first); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("first list %v", got)
	}
	for i, want := range [][]string{{"b", "c"}, {"b", "c"}} {
		w := <-watches
		if i == 0 {
			tc.change(t, f)
		}
		at := rec.mark()
		w.Stop()
		relist, end := nextAction(t, rec, at, "relist", syncedOf(tc.kind))
		if got := tc.names(relist); !slices.Equal(got, want) {
			t.Errorf("relist %d = %v, want %v", i, got, want)
		}
		if got := rec.since(at)[:end-at]; len(got) != 1 {
			t.Errorf("relist %d gave %s, want one SourceSynced", i, describeActions(got))
		}
	}
}

// With watch-list (client-go's default from 0.35 on against a real API
// server), the initial stream of Added events up to the initial-events-end
// bookmark is still one SourceSynced, and later events are upserts.
func TestKubeWatchListStream(t *testing.T) {
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		t.Skip("watch-list is disabled in this environment")
	}
	k, err := NewKube(KubeConfig{Client: fakeClient(fake.NewClientset()), Dynamic: newKubeFakes(nil).dyn, Node: testNodeName, Log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rec := newActionRecorder()
	store := newKindStore(nodeCodec(), rec.dispatch, k.log)
	stream := kwatch.NewRaceFreeFake()
	stream.Add(testNode("a", "2", nil, "10.0.0.1/24"))
	stream.Add(testNode("b", "3", nil, "10.0.0.2/24"))
	end := &corev1.Node{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "3",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	stream.Action(kwatch.Bookmark, end)
	lw := &observedLW{client: struct{}{}, observe: store.observe,
		list: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return nil, errors.New("list called: watch-list was not used")
		},
		watch: func(context.Context, metav1.ListOptions) (kwatch.Interface, error) { return stream, nil }}
	ctx, cancel := context.WithTimeout(bgCtx(), 20*time.Second)
	defer cancel()
	r := k.reflector("nodes", lw, &corev1.Node{}, store)
	go r.RunWithContext(ctx)

	synced, at := nextAction(t, rec, 0, "stream", syncedOf(state.KindNode))
	if got := keys(state.NodeInput, synced.Nodes); !slices.Equal(got, []string{"a", "b"}) || at != 1 {
		t.Fatalf("stream gave %s", describeActions(rec.since(0)))
	}
	stream.Modify(testNode("a", "4", map[string]string{"rack": "r1"}, "10.0.0.1/24"))
	nextAction(t, rec, at, "a relabelled", func(a state.NodeUpserted) bool { return a.Node.Labels["rack"] == "r1" })
}
