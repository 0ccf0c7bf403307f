package watch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// meshManifest is a cluster.yaml as tools/meshsim writes it for each
// agent (speaker.go manifests): the default BGPConfiguration, one IPPool,
// and per node its Node (with Calico's address annotation) and the
// BlockAffinity of its /26.
func meshManifest(nodes int) []byte {
	var b strings.Builder
	b.WriteString(`apiVersion: crd.projectcalico.org/v1
kind: BGPConfiguration
metadata:
  name: default
spec:
  asNumber: 64512
  nodeToNodeMeshEnabled: true
---
apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata:
  name: default-ipv4-ippool
spec:
  cidr: 10.244.0.0/16
  ipipMode: Never
  vxlanMode: Never
  natOutgoing: true
  blockSize: 26
`)
	for i := range nodes {
		name := fmt.Sprintf("node-%d", i+1)
		addr := fmt.Sprintf("10.200.%d.%d", (i+1)/250, (i+1)%250+1)
		block := fmt.Sprintf("10.244.%d.%d/26", i/4, i%4*64)
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Node
metadata:
  name: %s
  annotations:
    projectcalico.org/IPv4Address: %s/16
---
apiVersion: crd.projectcalico.org/v1
kind: BlockAffinity
metadata:
  name: %s-%s
spec:
  node: %s
  cidr: %s
  state: confirmed
  deleted: "false"
`, name, addr, name, strings.NewReplacer(".", "-", "/", "-").Replace(block), name, block)
	}
	return []byte(b.String())
}

// BenchmarkDecodeManifest decodes meshsim's cluster.yaml for 50 and 500
// nodes, as an agent's manifest directory does at its start.
func BenchmarkDecodeManifest(b *testing.B) {
	for _, n := range []int{50, 500} {
		data := meshManifest(n)
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				objs, probs := decodeManifestIn(data, state.DefaultNamespace, "node-1")
				if len(probs) != 0 || len(objs) != 2+2*n {
					b.Fatalf("%d objects, problems %v", len(objs), probs)
				}
			}
		})
	}
}
