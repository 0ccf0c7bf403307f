package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// TestPlanSecretsNamespace: plan reads password Secrets from the
// --secrets-namespace it is given, not the default one.
func TestPlanSecretsNamespace(t *testing.T) {
	dir := t.TempDir()
	const manifest = `apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: tor}
spec:
  peerIP: 192.0.2.9
  asNumber: 65009
  password: {secretKeyRef: {name: pw, key: k}}
---
apiVersion: v1
kind: Secret
metadata: {name: pw, namespace: other-ns}
stringData: {k: plan-ns-password}
---
apiVersion: v1
kind: Node
metadata:
  name: node-a
  annotations: {projectcalico.org/IPv4Address: 192.0.2.1/24}
`
	if err := os.WriteFile(filepath.Join(dir, "all.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	p := MakePlan(dir, "node-a", state.Options{Namespace: "other-ns"})
	if len(p.Neighbors) != 1 || !strings.HasPrefix(p.Neighbors[0].Password, "hmac:") {
		t.Errorf("in other-ns: neighbors %+v, problems %v", p.Neighbors, p.Problems)
	}
	p = MakePlan(dir, "node-a", state.Options{})
	if len(p.Neighbors) == 1 && p.Neighbors[0].Password != "" {
		t.Errorf("in the default namespace the other-ns Secret was used: %+v", p.Neighbors)
	}
}
