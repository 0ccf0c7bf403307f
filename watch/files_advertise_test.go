package watch

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/peeragent/peeragent/state"
)

// TestLoadDirAdvertisingKinds: BlockAffinities and IPPools are read from
// both API groups (docs/routes.md "Amendment to §1", §11.7): v1's string
// deleted and v3's bool both arrive as text, an unknown field is listed in
// Unsupported, and one name in both groups is one object (the first wins,
// the other is a duplicate problem).
func TestLoadDirAdvertisingKinds(t *testing.T) {
	dir := t.TempDir()
	writeManifests(t, dir, map[string]string{
		"a.yaml": `apiVersion: crd.projectcalico.org/v1
kind: BlockAffinity
metadata: {name: node-a-10-244-1-0-26}
spec: {node: node-a, cidr: 10.244.1.0/26, state: confirmed, deleted: "false"}
---
apiVersion: projectcalico.org/v3
kind: BlockAffinity
metadata: {name: node-b-10-244-2-0-26}
spec: {node: node-b, cidr: 10.244.2.0/26, state: pending, deleted: true}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: default-pool}
spec: {cidr: 10.244.0.0/16, ipipMode: Never, vxlanMode: Never, disableBGPExport: true, natOutgoing: true, blockSize: 26}
---
apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata: {name: typo}
spec: {cidr: 10.245.0.0/16, disableBGPexport: true}
`,
		"b.yaml": `apiVersion: projectcalico.org/v3
kind: BlockAffinity
metadata: {name: node-a-10-244-1-0-26}
spec: {node: node-a, cidr: 10.244.9.0/26, state: confirmed}
`,
	})
	got, probs := LoadDir(dir)
	want := Objects{
		Affinities: []state.BlockAffinity{
			{Name: "node-a-10-244-1-0-26", Node: "node-a", CIDR: "10.244.1.0/26", State: "confirmed", Deleted: "false"},
			{Name: "node-b-10-244-2-0-26", Node: "node-b", CIDR: "10.244.2.0/26", State: "pending", Deleted: "true"},
		},
		Pools: []state.IPPool{
			{Name: "default-pool", CIDR: "10.244.0.0/16", IPIPMode: "Never", VXLANMode: "Never", DisableBGPExport: true},
			{Name: "typo", CIDR: "10.245.0.0/16", Unsupported: []string{"spec.disableBGPexport"}},
		},
	}
	if d := cmp.Diff(want, got, fileCmp); d != "" {
		t.Errorf("objects (-want +got):\n%s", d)
	}
	if len(probs) != 1 || probs[0].Object != "file/b.yaml" {
		t.Errorf("problems: %v, want one duplicate on file/b.yaml", probs)
	}
}
