package watch

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	discoveryfake "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/peeragent/peeragent/state"
)

func testPeerSpec(asn int64, ip string) map[string]any {
	return map[string]any{"asNumber": asn, "peerIP": ip}
}

// keys are the keys of objects of kind k (their names; NAMESPACE/NAME for a
// namespaced kind), in order.
func keys[T any, U, D state.Action](k *state.InputKind[T, U, D], objects []T) []string {
	var out []string
	for i := range objects {
		out = append(out, k.Key(&objects[i]))
	}
	return out
}

func syncedOf(k state.Kind) func(state.SourceSynced) bool {
	return func(a state.SourceSynced) bool { return a.Kind == k }
}

// fakeDiscovery serves the given group-versions.
func fakeDiscovery(gvs ...string) *discoveryfake.FakeDiscovery {
	d := &discoveryfake.FakeDiscovery{Fake: &k8stesting.Fake{}}
	for _, gv := range gvs {
		d.Resources = append(d.Resources, &metav1.APIResourceList{GroupVersion: gv})
	}
	return d
}

func TestKubeCalicoKinds(t *testing.T) {
	cases := []struct {
		name, flag, group, other string
		disc                     []string
	}{
		{name: "crd-group-by-default", flag: "", group: GroupCRD, other: GroupV3},
		{name: "v3-group-by-flag", flag: GroupV3, group: GroupV3, other: GroupCRD},
		{name: "v3-group-auto-detected", flag: GroupAuto, group: GroupV3, other: GroupCRD, disc: []string{GroupV3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newKubeFakes(nil,
				calicoObject(tc.group, "BGPPeer", "p1", "1", testPeerSpec(64513, "10.0.0.1")),
				calicoObject(tc.other, "BGPPeer", "decoy", "1", testPeerSpec(64513, "10.0.0.9")),
				calicoObject(tc.group, "BGPConfiguration", "default", "1", map[string]any{"asNumber": int64(64512)}),
				calicoObject(tc.group, "BGPFilter", "f1", "1", map[string]any{
					"exportV4": []any{map[string]any{"cidr": "10.0.0.0/8", "matchOperator": "In", "action": "Accept"}}}))
			if tc.disc != nil {
				f.disc = fakeDiscovery(tc.disc...)
			}
			_, rec := startKube(t, f, tc.flag, nil)
			checkInitialLists(t, rec)
			waitSynced(t, f, rec)
			checkCalicoEvents(t, f, rec, tc.group)
		})
	}
}

// checkInitialLists: one SourceSynced per kind, from the chosen group only.
func checkInitialLists(t *testing.T, rec *actionRecorder) {
	t.Helper()
	peers, _ := nextAction(t, rec, 0, "peer list", syncedOf(state.KindBGPPeer))
	if got := keys(state.PeerInput, peers.Peers); !slices.Equal(got, []string{"p1"}) {
		t.Fatalf("peers = %v, want [p1]", got)
	}
	if p := peers.Peers[0]; p.ASNumber != 64513 || p.PeerIP != "10.0.0.1" {
		t.Errorf("p1 converted to %+v", p)
	}
	configs, _ := nextAction(t, rec, 0, "config list", syncedOf(state.KindBGPConfiguration))
	if len(configs.Configs) != 1 || configs.Configs[0].ASNumber != 64512 {
		t.Errorf("configs = %+v", configs.Configs)
	}
	filters, _ := nextAction(t, rec, 0, "filter list", syncedOf(state.KindBGPFilter))
	if len(filters.Filters) != 1 || len(filters.Filters[0].ExportV4) != 1 || filters.Filters[0].ExportV4[0].CIDR != "10.0.0.0/8" {
		t.Errorf("filters = %+v", filters.Filters)
	}
	nodes, _ := nextAction(t, rec, 0, "node list", syncedOf(state.KindNode))
	if len(nodes.Nodes) != 0 {
		t.Errorf("nodes = %+v", nodes.Nodes)
	}
}

// checkCalicoEvents: add, update (an unchanged resourceVersion dropped),
// delete, for each Calico kind.
func checkCalicoEvents(t *testing.T, f kubeFakes, rec *actionRecorder, group string) {
	t.Helper()
	peers := f.dyn.Resource(calicoGVR(group, "bgppeers"))
	at := waitSynced(t, f, rec)
	mustCall(t)(peers.Create(bgCtx(), calicoObject(group, "BGPPeer", "p2", "1", testPeerSpec(64520, "10.0.0.2")), metav1.CreateOptions{}))
	added, at := nextAction(t, rec, at, "p2 upserted", func(a state.PeerUpserted) bool { return a.Peer.Name == "p2" })
	if added.Peer.ASNumber != 64520 {
		t.Errorf("p2 = %+v", added.Peer)
	}
	mustCall(t)(peers.Update(bgCtx(), calicoObject(group, "BGPPeer", "p1", "1", testPeerSpec(64599, "10.0.0.1")), metav1.UpdateOptions{}))
	mustCall(t)(peers.Update(bgCtx(), calicoObject(group, "BGPPeer", "p1", "2", testPeerSpec(64514, "10.0.0.1")), metav1.UpdateOptions{}))
	upd, at := nextAction[state.PeerUpserted](t, rec, at, "p1 upserted", nil)
	if upd.Peer.Name != "p1" || upd.Peer.ASNumber != 64514 {
		t.Errorf("first upsert after the same-resourceVersion update = %+v, want p1 with AS 64514", upd.Peer)
	}
	if err := peers.Delete(bgCtx(), "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nextAction(t, rec, at, "p1 deleted", func(a state.PeerDeleted) bool { return a.Name == "p1" })

	configs := f.dyn.Resource(calicoGVR(group, "bgpconfigurations"))
	mustCall(t)(configs.Update(bgCtx(), calicoObject(group, "BGPConfiguration", "default", "2", map[string]any{"asNumber": int64(65000)}), metav1.UpdateOptions{}))
	nextAction(t, rec, at, "config upserted", func(a state.ConfigUpserted) bool { return a.Config.ASNumber == 65000 })
	if err := f.dyn.Resource(calicoGVR(group, "bgpfilters")).Delete(bgCtx(), "f1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nextAction(t, rec, at, "filter deleted", func(a state.FilterDeleted) bool { return a.Name == "f1" })
	for _, a := range rec.since(0) {
		if p, ok := a.(state.PeerUpserted); ok && p.Peer.Name == "decoy" {
			t.Errorf("object of the other group seen: %+v", p)
		}
	}
}

// mustCall fails the test on the error of a client call: mustCall(t)(c.Create(...)).
func mustCall(t *testing.T) func(any, error) {
	return func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}
