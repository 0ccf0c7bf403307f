package watch

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kwatch "k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/peeragent/peeragent/state"
)

func testAffinity(group, name, rv, node, cidr string) *unstructured.Unstructured {
	deleted := any("false")
	if group == GroupV3 {
		deleted = false
	}
	return calicoObject(group, "BlockAffinity", name, rv,
		map[string]any{"node": node, "cidr": cidr, "state": "confirmed", "deleted": deleted})
}

func testPool(group, name, rv, cidr string) *unstructured.Unstructured {
	return calicoObject(group, "IPPool", name, rv, map[string]any{"cidr": cidr, "ipipMode": "Never", "vxlanMode": "Never"})
}

func testPod(ns, name, rv, node string, ips ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, ip := range ips {
		p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	return p
}

// mentionsOther reports whether an action carries anything of another node
// (an affinity or pod whose name ends in "-other").
func mentionsOther(a state.Action) bool {
	isOther := func(name string) bool { return strings.HasSuffix(name, "-other") }
	switch a := a.(type) {
	case state.BlockAffinityUpserted:
		return isOther(a.Affinity.Name)
	case state.BlockAffinityDeleted:
		return isOther(a.Name)
	case state.PodUpserted:
		return isOther(a.Pod.Name)
	case state.PodDeleted:
		return isOther(a.Name)
	case state.InputProblemsReported:
		return isOther(a.Source)
	case state.SourceSynced:
		return slices.ContainsFunc(keys(state.AffinityInput, a.Affinities), isOther) || slices.ContainsFunc(keys(state.PodInput, a.Pods), isOther)
	}
	return false
}

// BlockAffinities and IPPools of either group, and this node's Pods: the
// first lists hold this node's affinities and pods only; events are
// upserts and deletes; anything of another node gives zero actions, and an
// affinity moved to another node is a delete; the pod list and watch ask
// the API server for spec.nodeName=node-a.
func TestKubeAffinitiesPoolsPods(t *testing.T) {
	for _, tc := range []struct{ group, other string }{{GroupCRD, GroupV3}, {GroupV3, GroupCRD}} {
		t.Run(tc.group, func(t *testing.T) {
			g := tc.group
			f := newKubeFakes(
				[]runtime.Object{
					testPod("web", "p1", "1", testNodeName, "10.244.0.5"),
					testPod("web", "p1-other", "1", "node-b", "10.244.9.5"),
				},
				testAffinity(g, "a1", "1", testNodeName, "10.244.0.0/26"),
				testAffinity(g, "a1-other", "1", "node-b", "10.244.9.0/26"),
				testAffinity(tc.other, "decoy", "1", testNodeName, "10.99.0.0/26"),
				testPool(g, "pool1", "1", "10.244.0.0/16"),
			)
			_, rec := startKube(t, f, g, nil)
			affs, _ := nextAction(t, rec, 0, "affinity list", syncedOf(state.KindBlockAffinity))
			if got := keys(state.AffinityInput, affs.Affinities); !slices.Equal(got, []string{"a1"}) {
				t.Fatalf("affinities listed %v, want [a1]", got)
			}
			if a := affs.Affinities[0]; a.Node != testNodeName || a.CIDR != "10.244.0.0/26" || a.State != "confirmed" || a.Deleted != "false" {
				t.Errorf("a1 converted to %+v", a)
			}
			pools, _ := nextAction(t, rec, 0, "pool list", syncedOf(state.KindIPPool))
			if got := keys(state.PoolInput, pools.Pools); !slices.Equal(got, []string{"pool1"}) || pools.Pools[0].CIDR != "10.244.0.0/16" || pools.Pools[0].IPIPMode != "Never" {
				t.Errorf("pools listed %+v", pools.Pools)
			}
			pods, _ := nextAction(t, rec, 0, "pod list", syncedOf(state.KindPod))
			if got := keys(state.PodInput, pods.Pods); !slices.Equal(got, []string{"web/p1"}) || !slices.Equal(pods.Pods[0].PodIPs, []string{"10.244.0.5"}) || pods.Pods[0].Phase != "Running" {
				t.Errorf("pods listed %+v", pods.Pods)
			}
			at := waitSynced(t, f, rec)

			affRes, poolRes, podRes := f.dyn.Resource(calicoGVR(g, "blockaffinities")), f.dyn.Resource(calicoGVR(g, "ippools")), f.client.CoreV1().Pods("web")
			// Another node's affinity and pod, created, updated, deleted:
			// nothing; then one of ours, which must be the next action.
			mustCall(t)(affRes.Create(bgCtx(), testAffinity(g, "a2-other", "1", "node-b", "10.244.8.0/26"), metav1.CreateOptions{}))
			mustCall(t)(affRes.Update(bgCtx(), testAffinity(g, "a1-other", "2", "node-c", "10.244.9.0/26"), metav1.UpdateOptions{}))
			mustCall(t)(nil, affRes.Delete(bgCtx(), "a2-other", metav1.DeleteOptions{}))
			mustCall(t)(podRes.Create(bgCtx(), testPod("web", "p2-other", "1", "node-b", "10.244.9.6"), metav1.CreateOptions{}))
			mustCall(t)(nil, podRes.Delete(bgCtx(), "p1-other", metav1.DeleteOptions{}))
			mustCall(t)(affRes.Create(bgCtx(), testAffinity(g, "a2", "1", testNodeName, "10.244.0.64/26"), metav1.CreateOptions{}))
			mustCall(t)(podRes.Create(bgCtx(), testPod("web", "p2", "1", testNodeName, "10.244.0.6"), metav1.CreateOptions{}))
			_, afterAff := nextAction(t, rec, at, "a2 upserted", func(a state.BlockAffinityUpserted) bool { return a.Affinity.Name == "a2" })
			_, afterPod := nextAction(t, rec, at, "p2 upserted", func(a state.PodUpserted) bool { return a.Pod.Key() == "web/p2" })
			end := max(afterAff, afterPod)
			if got := rec.since(at)[:end-at]; len(got) != 2 {
				t.Errorf("other nodes' changes gave actions: %s", describeActions(got))
			}
			at = end

			// Ours moved to another node: a delete. Pool and pod updated and deleted.
			mustCall(t)(affRes.Update(bgCtx(), testAffinity(g, "a1", "2", "node-b", "10.244.0.0/26"), metav1.UpdateOptions{}))
			_, at = nextAction(t, rec, at, "a1 deleted", func(a state.BlockAffinityDeleted) bool { return a.Name == "a1" })
			mustCall(t)(poolRes.Update(bgCtx(), calicoObject(g, "IPPool", "pool1", "2", map[string]any{"cidr": "10.244.0.0/16", "disableBGPExport": true}), metav1.UpdateOptions{}))
			_, at = nextAction(t, rec, at, "pool1 upserted", func(a state.IPPoolUpserted) bool { return a.Pool.DisableBGPExport })
			mustCall(t)(nil, poolRes.Delete(bgCtx(), "pool1", metav1.DeleteOptions{}))
			_, at = nextAction(t, rec, at, "pool1 deleted", func(a state.IPPoolDeleted) bool { return a.Name == "pool1" })
			p2 := testPod("web", "p2", "2", testNodeName, "10.244.0.6")
			p2.Status.Phase = corev1.PodSucceeded
			mustCall(t)(podRes.UpdateStatus(bgCtx(), p2, metav1.UpdateOptions{}))
			_, at = nextAction(t, rec, at, "p2 succeeded", func(a state.PodUpserted) bool { return a.Pod.Phase == "Succeeded" })
			mustCall(t)(nil, podRes.Delete(bgCtx(), "p2", metav1.DeleteOptions{}))
			nextAction(t, rec, at, "p2 deleted", func(a state.PodDeleted) bool { return a == state.PodDeleted{Namespace: "web", Name: "p2"} })

			for _, a := range rec.since(0) {
				if mentionsOther(a) {
					t.Errorf("another node's object dispatched: %s", describeActions([]state.Action{a}))
				}
				if u, ok := a.(state.BlockAffinityUpserted); ok && u.Affinity.Name == "decoy" {
					t.Errorf("affinity of the other group dispatched: %+v", u)
				}
			}
			checkPodSelector(t, f.client.Actions())
		})
	}
}

// checkPodSelector: every pod list and watch asked for this node's pods.
func checkPodSelector(t *testing.T, actions []k8stesting.Action) {
	t.Helper()
	n := 0
	for _, a := range actions {
		if a.GetResource().Resource != "pods" {
			continue
		}
		var sel string
		switch a := a.(type) {
		case k8stesting.ListActionImpl:
			sel = a.ListRestrictions.Fields.String()
		case k8stesting.WatchActionImpl:
			sel = a.WatchRestrictions.Fields.String()
		default:
			continue
		}
		n++
		if sel != "spec.nodeName="+testNodeName {
			t.Errorf("pod %s with field selector %q", a.GetVerb(), sel)
		}
	}
	if n < 2 {
		t.Errorf("%d pod lists and watches, want a list and a watch", n)
	}
}

// A relist of each new kind (the watch closes, changes were missed) is one
// SourceSynced with the full list, this node's only, nothing else.
func TestKubeRelistAffinitiesPoolsPods(t *testing.T) {
	cases := []relistCase{ // change adds c (and another node's), deletes a
		{name: "blockaffinities", kind: state.KindBlockAffinity,
			tap: func(f kubeFakes) <-chan *kwatch.RaceFreeFakeWatcher {
				return tapWatches(&f.dyn.Fake, "blockaffinities")
			},
			change: func(t *testing.T, f kubeFakes) {
				r := f.dyn.Resource(calicoGVR(GroupCRD, "blockaffinities"))
				mustCall(t)(r.Create(bgCtx(), testAffinity(GroupCRD, "c", "1", testNodeName, "10.244.0.128/26"), metav1.CreateOptions{}))
				mustCall(t)(r.Create(bgCtx(), testAffinity(GroupCRD, "c-other", "1", "node-b", "10.244.9.0/26"), metav1.CreateOptions{}))
				mustCall(t)(nil, r.Delete(bgCtx(), "a", metav1.DeleteOptions{}))
			},
			names: func(a state.SourceSynced) []string { return keys(state.AffinityInput, a.Affinities) }},
		{name: "ippools", kind: state.KindIPPool,
			tap: func(f kubeFakes) <-chan *kwatch.RaceFreeFakeWatcher { return tapWatches(&f.dyn.Fake, "ippools") },
			change: func(t *testing.T, f kubeFakes) {
				r := f.dyn.Resource(calicoGVR(GroupCRD, "ippools"))
				mustCall(t)(r.Create(bgCtx(), testPool(GroupCRD, "c", "1", "10.3.0.0/16"), metav1.CreateOptions{}))
				mustCall(t)(nil, r.Delete(bgCtx(), "a", metav1.DeleteOptions{}))
			},
			names: func(a state.SourceSynced) []string { return keys(state.PoolInput, a.Pools) }},
		{name: "pods", kind: state.KindPod,
			tap: func(f kubeFakes) <-chan *kwatch.RaceFreeFakeWatcher { return tapWatches(&f.client.Fake, "pods") },
			change: func(t *testing.T, f kubeFakes) {
				r := f.client.CoreV1().Pods("ns")
				mustCall(t)(r.Create(bgCtx(), testPod("ns", "c", "1", testNodeName, "10.244.0.7"), metav1.CreateOptions{}))
				mustCall(t)(r.Create(bgCtx(), testPod("ns", "c-other", "1", "node-b", "10.244.9.7"), metav1.CreateOptions{}))
				mustCall(t)(nil, r.Delete(bgCtx(), "a", metav1.DeleteOptions{}))
			},
			names: func(a state.SourceSynced) []string {
				var out []string
				for _, p := range a.Pods {
					out = append(out, p.Name)
				}
				return out
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newKubeFakes(
				[]runtime.Object{testPod("ns", "a", "1", testNodeName), testPod("ns", "b", "1", testNodeName)},
				testAffinity(GroupCRD, "a", "1", testNodeName, "10.244.0.0/26"),
				testAffinity(GroupCRD, "b", "1", testNodeName, "10.244.0.64/26"),
				testPool(GroupCRD, "a", "1", "10.1.0.0/16"), testPool(GroupCRD, "b", "1", "10.2.0.0/16"))
			tc.check(t, f)
		})
	}
}

// The store's edge filter: a tombstone of an affinity never dispatched
// (another node's) is nothing; one of ours, with or without its object,
// is a delete; a pod's tombstone key is NAMESPACE/NAME.
func TestKubeStoreEdgeFilterTombstones(t *testing.T) {
	ours := testAffinity(GroupCRD, "a1", "1", testNodeName, "10.244.0.0/26")
	other := testAffinity(GroupCRD, "a1-other", "1", "node-b", "10.244.9.0/26")
	rec := newActionRecorder()
	s := newKindStore(affinityCodec(testNodeName), rec.dispatch, discardLogger())
	if err := s.Replace([]any{ours, other}, "1"); err != nil {
		t.Fatal(err)
	}
	at := rec.mark()
	for _, tomb := range []cache.DeletedFinalStateUnknown{{Key: "a1-other", Obj: other}, {Key: "a1-other"}, {Key: "a1"}} {
		if err := s.Delete(tomb); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := describeActions(rec.since(at)), describeActions([]state.Action{state.BlockAffinityDeleted{Name: "a1"}}); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}

	pods := newKindStore(podCodec(testNodeName), rec.dispatch, discardLogger())
	if err := pods.Replace([]any{testPod("web", "p1", "1", testNodeName)}, "1"); err != nil {
		t.Fatal(err)
	}
	at = rec.mark()
	if err := pods.Delete(cache.DeletedFinalStateUnknown{Key: "web/p1"}); err != nil {
		t.Fatal(err)
	}
	if got, want := describeActions(rec.since(at)), describeActions([]state.Action{state.PodDeleted{Namespace: "web", Name: "p1"}}); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}
