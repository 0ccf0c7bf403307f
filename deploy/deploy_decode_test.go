package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	calicov3 "github.com/projectcalico/api/pkg/apis/projectcalico/v3"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestManifestsDecodeStrictly(t *testing.T) {
	s := newScheme(t)
	for _, file := range manifestFiles(t) {
		t.Run(file, func(t *testing.T) {
			ms, err := loadFile(s, file)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				if m.obj == nil && m.crd == nil && m.pm == nil {
					t.Errorf("%s: not decoded", m)
				}
				if m.crd != nil {
					for _, validate := range crdValidators {
						if m.obj == nil {
							t.Fatalf("%s: the scheme does not know CRDs", m)
						}
						if err := validate(m.obj); err != nil {
							t.Errorf("%s: %v", m, err)
						}
					}
				}
			}
		})
	}
}

// TestDecoderIsStrict keeps the decoder honest: mistakes it must reject.
func TestDecoderIsStrict(t *testing.T) {
	s := newScheme(t)
	cases := []struct {
		name string
		doc  string
	}{
		{"unknown-field-in-daemonset", `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: x}
spec: {hostNetwrok: true}`},
		{"duplicate-field", `
apiVersion: v1
kind: ServiceAccount
metadata: {name: x}
metadata: {name: y}`},
		{"unknown-field-in-bgppeer-spec", `
apiVersion: crd.projectcalico.org/v1
kind: BGPPeer
metadata: {name: x}
spec: {peerIp: 192.0.2.1}`},
		{"unknown-field-in-v3-bgpfilter-rule", `
apiVersion: projectcalico.org/v3
kind: BGPFilter
metadata: {name: x}
spec: {exportV4: [{action: Accept, cidrs: 10.0.0.0/8}]}`},
		{"unknown-field-in-crd-schema", `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: xs.example.com}
spec:
  group: example.com
  names: {kind: X, listKind: XList, plural: xs, singular: x}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, propertys: {}}}`},
		{"unknown-kind", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: x}`},
		{"wrong-type", `
apiVersion: crd.projectcalico.org/v1
kind: BGPConfiguration
metadata: {name: default}
spec: {nodeToNodeMeshEnabled: "yes"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if m, err := decode(s, []byte(c.doc)); err == nil {
				t.Fatalf("decoded %v without error", m.gvk)
			}
		})
	}
}

// kustomization reads dir/kustomization.yaml strictly and checks that its
// resources exist.
func kustomization(t *testing.T, dir string) []string {
	t.Helper()
	path := filepath.Join(dir, "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := strictUnmarshal(j, &k); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("%s is %s %s", path, k.APIVersion, k.Kind)
	}
	for _, r := range k.Resources {
		if _, err := os.Stat(filepath.Join(dir, r)); err != nil {
			t.Errorf("%s: resource %s: %v", path, r, err)
		}
	}
	return k.Resources
}

func TestKustomization(t *testing.T) {
	// deploy/ is base/ (a kustomization cannot list its parent, so the
	// manifests that overlays share live below them).
	if got := kustomization(t, "."); !slices.Equal(got, []string{"base"}) {
		t.Errorf("kustomization.yaml resources %q, want [base]", got)
	}
	resources := kustomization(t, "base")
	// Every manifest of base/ is installed; nothing else of deploy/ is: the
	// examples, the CRDs (Calico installs its own) and the PodMonitor
	// (monitoring/, optional).
	for _, f := range manifestFiles(t) {
		name, inBase := strings.CutPrefix(f, "base/")
		listed := slices.Contains(resources, name)
		switch {
		case inBase && !listed:
			t.Errorf("%s is not listed in base/kustomization.yaml", f)
		case !inBase && strings.HasPrefix(f, "example-") && slices.Contains(resources, "../"+f):
			t.Errorf("%s is listed: an example is not installed by default", f)
		}
	}
}

// TestMonitoringKustomization: deploy/monitoring is the PodMonitor alone,
// applied beside an overlay: it cannot list the agent's kustomization, its
// parent (kustomize: "cycle detected"; TestOverlaysRender builds it).
func TestMonitoringKustomization(t *testing.T) {
	got := kustomization(t, "monitoring")
	if want := []string{"podmonitor.yaml"}; !slices.Equal(got, want) {
		t.Errorf("monitoring/kustomization.yaml resources %q, want %q", got, want)
	}
}

// TestNoNamespaceTheProjectDoesNotOwn: the only Namespace deploy/ holds is
// the agent's own, so deleting the kustomization never deletes Calico's.
func TestNoNamespaceTheProjectDoesNotOwn(t *testing.T) {
	ms := loadManifests(t)
	for _, ns := range all[*corev1.Namespace](ms) {
		if ns.Name != agentNamespace {
			t.Errorf("Namespace %q: deploy/ may create only its own, %q", ns.Name, agentNamespace)
		}
	}
	if ns := only[*corev1.Namespace](t, ms); ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("Namespace %s labels %v: a hostNetwork pod needs pod-security privileged", ns.Name, ns.Labels)
	}
}

func TestNamespacedObjectsAreInTheirNamespaces(t *testing.T) {
	ms := loadManifests(t)
	// The agent's objects in its namespace; what touches the password
	// Secrets in Calico/VPP's.
	want := map[string]string{"ServiceAccount": agentNamespace, "DaemonSet": agentNamespace, "PodMonitor": agentNamespace,
		"Role": secretsNamespace, "RoleBinding": secretsNamespace, "Secret": secretsNamespace}
	for _, m := range ms {
		var got string
		switch {
		case m.pm != nil:
			got = m.pm.Metadata.Namespace
		default:
			acc, ok := m.obj.(interface{ GetNamespace() string })
			if !ok {
				continue
			}
			got = acc.GetNamespace()
		}
		switch ns, namespaced := want[m.gvk.Kind]; {
		case namespaced && got != ns:
			t.Errorf("%s: namespace %q, want %q", m, got, ns)
		case !namespaced && got != "":
			t.Errorf("%s: cluster-scoped, has namespace %q", m, got)
		}
	}
	sa := only[*corev1.ServiceAccount](t, ms)
	if sa.Name != serviceAccount {
		t.Errorf("ServiceAccount %q, want %q", sa.Name, serviceAccount)
	}
}

func TestExampleBGPPeer(t *testing.T) {
	ms := loadManifests(t)
	var peers []*calicov3.BGPPeer
	for _, m := range ms {
		if p, ok := m.obj.(*calicov3.BGPPeer); ok && strings.HasPrefix(m.file, "example-") {
			if m.gvk.GroupVersion() != calicoCRDGroup {
				t.Errorf("%s: %s, want %s", m, m.gvk.GroupVersion(), calicoCRDGroup)
			}
			peers = append(peers, p)
		}
	}
	if len(peers) != 1 {
		t.Fatalf("%d example BGPPeers, want 1", len(peers))
	}
	p := peers[0]
	if p.Spec.PeerIP == "" || p.Spec.ASNumber == 0 {
		t.Errorf("example peer: peerIP %q asNumber %d", p.Spec.PeerIP, p.Spec.ASNumber)
	}
	if p.Spec.Password == nil || p.Spec.Password.SecretKeyRef == nil {
		t.Fatal("example peer has no password.secretKeyRef")
	}
	ref := p.Spec.Password.SecretKeyRef
	found := false
	for _, s := range all[*corev1.Secret](ms) {
		if s.Name != ref.Name {
			continue
		}
		found = true
		if s.Namespace != secretsNamespace {
			t.Errorf("Secret %s in %q, want %q (the agent reads no other)", s.Name, s.Namespace, secretsNamespace)
		}
		_, inData := s.Data[ref.Key]
		_, inString := s.StringData[ref.Key]
		if !inData && !inString {
			t.Errorf("Secret %s has no key %q", s.Name, ref.Key)
		}
	}
	if !found {
		t.Errorf("no example Secret %q", ref.Name)
	}
}
