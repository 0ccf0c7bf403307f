package watch

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// TestUnsupportedFieldsSameInBothSources feeds the same Calico objects to
// the manifest directory and to the cluster source's decoder: both give the
// same object, its unsupported fields listed (the cluster used to drop
// them silently: a rule {action: Reject, peerType: eBGP} became an
// unconditional Reject, a BGPPeer's keepaliveTime vanished, before this agent
// read it), and so the
// reducer reports the same problem whichever source it came from.
func TestUnsupportedFieldsSameInBothSources(t *testing.T) {
	tests := []struct {
		name, doc string
		codec     func(any) (any, error)
		want      []string
	}{
		{name: "peer-keepalive-time-typo", want: []string{"spec.keepAliveTime"}, codec: decodeWith(peerCodec().decode), doc: `
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: tor-a}
spec: {peerIP: 192.0.2.1, asNumber: 65001, keepAliveTime: 10s}
`},
		{name: "peer-local-workload-selector", want: []string{"spec.localWorkloadSelector"}, codec: decodeWith(peerCodec().decode), doc: `
apiVersion: crd.projectcalico.org/v1
kind: BGPPeer
metadata: {name: tor-a}
spec: {peerIP: 192.0.2.1, asNumber: 65001, localWorkloadSelector: "app == 'x'"}
`},
		{name: "filter-rule-peer-type", want: []string{"spec.importV4[0].peerType"}, codec: decodeWith(filterCodec().decode), doc: `
apiVersion: projectcalico.org/v3
kind: BGPFilter
metadata: {name: f1}
spec:
  importV4:
  - {action: Reject, peerType: eBGP}
`},
		{name: "config-unknown", want: []string{"spec.ignoredInterfacez"}, codec: decodeWith(configCodec().decode), doc: `
apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: default}
spec: {asNumber: 65000, ignoredInterfacez: [eth9]}
`},
		{name: "affinity-unknown-crd", want: []string{"spec.nodez"}, codec: decodeWith(affinityCodec("node-a").decode), doc: `
apiVersion: crd.projectcalico.org/v1
kind: BlockAffinity
metadata: {name: node-a-10-244-0-0-26}
spec: {node: node-a, cidr: 10.244.0.0/26, state: confirmed, deleted: "false", nodez: node-b}
`},
		{name: "affinity-unknown-v3", want: []string{"spec.weight"}, codec: decodeWith(affinityCodec("node-a").decode), doc: `
apiVersion: projectcalico.org/v3
kind: BlockAffinity
metadata: {name: node-a-10-244-0-0-26}
spec: {node: node-a, cidr: 10.244.0.0/26, state: confirmed, deleted: false, weight: 3}
`},
		{name: "pool-unknown", want: []string{"spec.disableBGPExportz"}, codec: decodeWith(poolCodec().decode), doc: `
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool1}
spec: {cidr: 10.244.0.0/16, disableBGPExportz: true}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fromManifest, fromCluster := decodeBoth(t, tt.doc, tt.codec)
			if got := unsupportedOf(fromCluster); !cmp.Equal(got, tt.want) {
				t.Errorf("unsupported = %v, want %v", got, tt.want)
			}
			pm, pc := problemsOf(fromManifest), problemsOf(fromCluster)
			if len(pm) == 0 || !cmp.Equal(pm, pc) {
				t.Errorf("problems differ or are missing: manifest %v, cluster %v", pm, pc)
			}
		})
	}
}

// decodeBoth decodes doc, one object, as the manifest directory does and,
// with codec, as the cluster source does; t fails unless both decode it,
// and reports where the two objects differ.
func decodeBoth(t *testing.T, doc string, codec func(any) (any, error)) (fromManifest, fromCluster any) {
	t.Helper()
	objs, fps := decodeManifest([]byte(doc))
	if len(fps) != 0 || len(objs) != 1 {
		t.Fatalf("manifest: %d objects, problems %v", len(objs), fps)
	}
	var u unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	fromCluster, err := codec(&u)
	if err != nil {
		t.Fatalf("cluster decode: %v", err)
	}
	if d := cmp.Diff(objs[0].value, fromCluster, fileCmp); d != "" {
		t.Errorf("manifest and cluster objects differ (-manifest +cluster):\n%s", d)
	}
	return objs[0].value, fromCluster
}

func decodeWith[T any](dec func(any) (T, error)) func(any) (any, error) {
	return func(o any) (any, error) { return dec(o) }
}

func unsupportedOf(v any) []string {
	switch x := v.(type) {
	case state.BGPPeer:
		return x.Unsupported
	case state.BGPFilter:
		return x.Unsupported
	case state.BGPConfiguration:
		return x.Unsupported
	case state.BlockAffinity:
		return x.Unsupported
	case state.IPPool:
		return x.Unsupported
	}
	return nil
}

// problemsOf is what the reducer says about one object on a node that
// uses it (a BGPFilter through a BGPPeer naming it).
func problemsOf(v any) []state.Problem {
	s := state.New("node-a", state.Options{})
	s = reducer.Reduce(s, state.NodeUpserted{Node: state.Node{Name: "node-a", IPv4Address: "10.0.0.1/24"}})
	switch x := v.(type) {
	case state.BGPPeer:
		s = reducer.Reduce(s, state.PeerUpserted{Peer: x})
	case state.BGPFilter:
		s = reducer.Reduce(s, state.FilterUpserted{Filter: x})
		s = reducer.Reduce(s, state.PeerUpserted{Peer: state.BGPPeer{Name: "p", PeerIP: "192.0.2.9", ASNumber: 65001, Filters: []string{x.Name}}})
	case state.BGPConfiguration:
		s = reducer.Reduce(s, state.ConfigUpserted{Config: x})
	case state.BlockAffinity:
		s = reducer.Reduce(s, state.BlockAffinityUpserted{Affinity: x})
	case state.IPPool:
		s = reducer.Reduce(s, state.IPPoolUpserted{Pool: x})
	}
	return s.AllProblems()
}
