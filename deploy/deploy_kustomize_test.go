package deploy

import (
	"path"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// overlayDirs lists the directories of deploy/ that hold a
// kustomization.yaml (relative to deploy/, "." for deploy/ itself): each is
// something `kubectl apply -k` is told to apply.
func overlayDirs(t *testing.T) []string {
	var dirs []string
	for _, f := range walkFiles(t, func(string) bool { return true }) {
		if path.Base(f) == "kustomization.yaml" {
			dirs = append(dirs, path.Dir(f))
		}
	}
	slices.Sort(dirs)
	return dirs
}

// render builds dir with kustomize's library, as `kubectl apply -k` and
// `kustomize build` do (load restrictions: files under the kustomization's
// root only), and returns the YAML.
func render(t *testing.T, dir string) []byte {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resMap, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := resMap.AsYaml()
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return out
}

// renderManifests renders dir and decodes every document strictly.
func renderManifests(t *testing.T, dir string) []manifest {
	t.Helper()
	docs, err := splitDocuments(render(t, dir))
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	s := newScheme(t)
	var ms []manifest
	for i, doc := range docs {
		m, err := decode(s, doc)
		if err != nil {
			t.Fatalf("kustomize build %s, document %d: %v\n%s", dir, i, err, doc)
		}
		m.file, m.index = "kustomize build "+dir, i
		ms = append(ms, m)
	}
	return ms
}

// kinds lists "Kind namespace/name" of each rendered object, sorted.
func kinds(ms []manifest) []string {
	var out []string
	for _, m := range ms {
		name, ns := objectName(m)
		out = append(out, m.gvk.Kind+" "+strings.TrimPrefix(ns+"/"+name, "/"))
	}
	slices.Sort(out)
	return out
}

func objectName(m manifest) (name, namespace string) {
	switch {
	case m.pm != nil:
		return m.pm.Metadata.Name, m.pm.Metadata.Namespace
	case m.crd != nil:
		return m.crd.Metadata.Name, ""
	}
	if o, ok := m.obj.(interface {
		GetName() string
		GetNamespace() string
	}); ok {
		return o.GetName(), o.GetNamespace()
	}
	return "", ""
}

// TestOverlaysRender: every kustomization of deploy/ builds with
// kustomize's library (as `kubectl apply -k DIR` does), every object it
// renders decodes strictly, and each holds exactly the objects its
// documentation names. A new overlay fails here until it is added below.
func TestOverlaysRender(t *testing.T) {
	agent := []string{
		"ClusterRole peeragent", "ClusterRoleBinding peeragent", "DaemonSet peeragent/peeragent",
		"Namespace peeragent", "ServiceAccount peeragent/peeragent",
	}
	want := map[string][]string{
		".":          append(slices.Clone(agent), "Role calico-vpp-dataplane/peeragent-secrets", "RoleBinding calico-vpp-dataplane/peeragent-secrets"),
		"base":       append(slices.Clone(agent), "Role calico-vpp-dataplane/peeragent-secrets", "RoleBinding calico-vpp-dataplane/peeragent-secrets"),
		"calico":     append(slices.Clone(agent), "Role kube-system/peeragent-secrets", "RoleBinding kube-system/peeragent-secrets"),
		"calico-vpp": append(slices.Clone(agent), "Role calico-vpp-dataplane/peeragent-secrets", "RoleBinding calico-vpp-dataplane/peeragent-secrets"),
		"monitoring": {"PodMonitor peeragent/peeragent"},
	}
	for _, dir := range overlayDirs(t) {
		t.Run(strings.ReplaceAll(dir, "/", "-"), func(t *testing.T) {
			w, ok := want[dir]
			if !ok {
				t.Fatalf("deploy/%s: an overlay this test does not know; add what it renders", dir)
			}
			got := kinds(renderManifests(t, dir))
			slices.Sort(w)
			if !slices.Equal(got, w) {
				t.Errorf("kustomize build %s:\n got %q\nwant %q", dir, got, w)
			}
		})
	}
	for dir := range want {
		if !slices.Contains(overlayDirs(t), dir) {
			t.Errorf("deploy/%s has no kustomization.yaml", dir)
		}
	}
}

// TestCalicoOverlay: deploy/calico runs the agent as plain Calico's BGP
// speaker: the kernel dataplane (with NET_ADMIN for netlink), no VPP
// socket or mount, the Secrets read in kube-system (calico-node's in a
// manifest install) and granted there by name only; every flag exists in
// `peeragent run`.
func TestCalicoOverlay(t *testing.T) {
	ms := renderManifests(t, "calico")
	ds := only[*appsv1.DaemonSet](t, ms)
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]
	flags := runFlags(t)
	args := map[string]string{}
	for _, a := range c.Args[1:] {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok || !flags[name] {
			t.Errorf("arg %q: not a --flag=value of peeragent run", a)
		}
		args[name] = value
	}
	for name, want := range map[string]string{"dataplane": "linux", "secrets-namespace": "kube-system",
		"node": "$(NODENAME)", "calico-api-group": "auto", "http-addr": "127.0.0.1:9179", "metrics-addr": ":9189"} {
		if args[name] != want {
			t.Errorf("--%s=%q, want %q", name, args[name], want)
		}
	}
	if _, ok := args["vpp-socket"]; ok {
		t.Errorf("--vpp-socket given: %q", c.Args)
	}
	if len(pod.Volumes) != 0 || len(c.VolumeMounts) != 0 {
		t.Errorf("volumes %v, mounts %v: want none (no VPP socket)", pod.Volumes, c.VolumeMounts)
	}
	caps := c.SecurityContext.Capabilities
	if caps == nil || !slices.Equal(caps.Add, []corev1.Capability{"NET_BIND_SERVICE", "NET_ADMIN"}) ||
		!slices.Equal(caps.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("capabilities %+v, want ALL dropped, NET_BIND_SERVICE and NET_ADMIN added", caps)
	}
	if p := c.SecurityContext.Privileged; p != nil && *p {
		t.Error("the agent's container is privileged")
	}
	if ic := pod.InitContainers; len(ic) != 1 || ic[0].Image != c.Image {
		t.Errorf("init containers %+v: want base's one, with the agent's image", ic)
	}
	for _, r := range all[*rbacv1.Role](ms) {
		for _, rule := range r.Rules {
			if len(rule.ResourceNames) == 0 || !slices.Equal(rule.Resources, []string{"secrets"}) {
				t.Errorf("Role %s/%s rule %+v: want secrets by name only", r.Namespace, r.Name, rule)
			}
		}
	}
	secretAccess := access{"watch", "", "secrets", "kube-system", exampleSecret}
	if !allowed(ms, secretAccess) {
		t.Errorf("%+v not allowed", secretAccess)
	}
	for _, a := range []access{{"watch", "", "secrets", "kube-system", ""}, {"get", "", "secrets", "kube-system", "calico-bgp-other"},
		{"get", "", "secrets", secretsNamespace, exampleSecret}} {
		if allowed(ms, a) {
			t.Errorf("%+v allowed", a)
		}
	}
}
