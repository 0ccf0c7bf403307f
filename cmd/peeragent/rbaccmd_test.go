package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// TestRBACCmd: `peeragent rbac --from DIR` prints a Role granting get,
// list and watch of exactly the Secrets that BGPPeers (whichever nodes they
// select) and BGPConfigurations reference, sorted and once each, and its
// RoleBinding to the agent's ServiceAccount; with no reference the Role
// has no rule (never one without resourceNames, which would grant every
// Secret).
func TestRBACCmd(t *testing.T) {
	const peers = `apiVersion: crd.projectcalico.org/v1
kind: BGPPeer
metadata: {name: tor-a}
spec:
  peerIP: 192.0.2.1
  asNumber: 64513
  password: {secretKeyRef: {name: tor-a-md5, key: pw}}
---
apiVersion: crd.projectcalico.org/v1
kind: BGPPeer
metadata: {name: tor-b}
spec:
  node: some-other-node
  peerIP: 192.0.2.2
  asNumber: 64514
  password: {secretKeyRef: {name: bgp-passwords, key: tor-b}}
---
apiVersion: crd.projectcalico.org/v1
kind: BGPPeer
metadata: {name: tor-c}
spec:
  peerIP: 192.0.2.3
  asNumber: 64515
  password: {secretKeyRef: {name: tor-a-md5, key: other}}
---
apiVersion: crd.projectcalico.org/v1
kind: BGPPeer
metadata: {name: plain}
spec: {peerIP: 192.0.2.4, asNumber: 64516}
`
	const config = `apiVersion: crd.projectcalico.org/v1
kind: BGPConfiguration
metadata: {name: default}
spec:
  nodeMeshPassword: {secretKeyRef: {name: mesh-md5, key: pw}}
`
	for _, tc := range []struct {
		name  string
		files map[string]string
		args  []string
		ns    string
		names []string
	}{
		{name: "peers-and-mesh", files: map[string]string{"peers.yaml": peers, "bgp.yaml": config},
			args: []string{"--secrets-namespace", "kube-system"}, ns: "kube-system",
			names: []string{"bgp-passwords", "mesh-md5", "tor-a-md5"}},
		{name: "nothing-referenced", files: map[string]string{"bgp.yaml": "apiVersion: crd.projectcalico.org/v1\nkind: BGPConfiguration\nmetadata: {name: default}\nspec: {}\n"},
			args: []string{"--secrets-namespace", "calico-system"}, ns: "calico-system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var out, errOut bytes.Buffer
			if err := rbacCmd(append([]string{"--from", dir}, tc.args...), &out, &errOut); err != nil {
				t.Fatalf("rbac: %v\n%s", err, errOut.String())
			}
			t.Logf("peeragent rbac:\n%s", out.String())
			docs := strings.Split(out.String(), "\n---\n")
			if len(docs) != 2 {
				t.Fatalf("%d documents, want a Role and a RoleBinding", len(docs))
			}
			var role rbacv1.Role
			var binding rbacv1.RoleBinding
			if err := yaml.UnmarshalStrict([]byte(docs[0]), &role); err != nil {
				t.Fatal(err)
			}
			if err := yaml.UnmarshalStrict([]byte(docs[1]), &binding); err != nil {
				t.Fatal(err)
			}
			if role.Kind != "Role" || role.Name != "peeragent-secrets" || role.Namespace != tc.ns {
				t.Errorf("Role %s %s/%s", role.Kind, role.Namespace, role.Name)
			}
			switch {
			case tc.names == nil && len(role.Rules) != 0:
				t.Errorf("rules %+v, want none", role.Rules)
			case tc.names != nil && (len(role.Rules) != 1 || strings.Join(role.Rules[0].ResourceNames, ",") != strings.Join(tc.names, ",") ||
				strings.Join(role.Rules[0].Verbs, ",") != "get,list,watch" || strings.Join(role.Rules[0].Resources, ",") != "secrets"):
				t.Errorf("rules %+v, want get,list,watch of secrets %v", role.Rules, tc.names)
			}
			if binding.Kind != "RoleBinding" || binding.Namespace != tc.ns || binding.RoleRef.Name != role.Name ||
				len(binding.Subjects) != 1 || binding.Subjects[0].Kind != "ServiceAccount" ||
				binding.Subjects[0].Namespace != "peeragent" || binding.Subjects[0].Name != "peeragent" {
				t.Errorf("RoleBinding %+v", binding)
			}
		})
	}
}
