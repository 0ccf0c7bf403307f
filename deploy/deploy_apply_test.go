package deploy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/peeragent/peeragent/internal/testrig/kube"
)

// applyTimeout bounds each overlay's apply.
const applyTimeout = 60 * time.Second

// TestOverlaysApply: every overlay, rendered by kustomize's library, is
// applied to a real kube-apiserver (with the CRDs of crds/ and a stand-in
// PodMonitor CRD) as `kubectl apply --server-side -k DIR` does: first with
// dryRun=All (the API server validates and admits every object, and stores
// none), then for real, one overlay after the other on the same cluster.
// Calico's namespaces (calico-vpp-dataplane; kube-system is the API
// server's own) exist beforehand, as on a Calico cluster. Then, as the
// agent's ServiceAccount (impersonated), the default Role is shown to
// authorize exactly what the agent does with a Secret: get, and list and
// watch with the field selector metadata.name=NAME, for the names it lists,
// and nothing else.
func TestOverlaysApply(t *testing.T) {
	c := kube.Start(t)
	c.InstallCRDs(t, "crds")
	c.InstallCRDs(t, "testdata")
	cfg := c.RESTConfig()
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secretsNamespace}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a := newApplier(t, cfg)
	for _, dir := range overlayDirs(t) {
		t.Run(strings.ReplaceAll(dir, "/", "-"), func(t *testing.T) {
			objs := renderObjects(t, dir)
			octx, ocancel := context.WithTimeout(ctx, applyTimeout)
			defer ocancel()
			// A Namespace the overlay creates must exist before a dry run
			// of what goes in it can pass admission (kubectl's own
			// --dry-run=server fails the same way on a fresh cluster).
			for _, o := range objs {
				if o.GetKind() == "Namespace" {
					a.apply(octx, t, o, false)
				}
			}
			for _, o := range objs {
				a.apply(octx, t, o, true)
			}
			for _, o := range objs {
				a.apply(octx, t, o, false)
			}
			t.Logf("kustomize build %s | kubectl apply --server-side: %d objects, dry run then applied", dir, len(objs))
		})
	}
	t.Run("secret-role-by-name", func(t *testing.T) { checkSecretRole(ctx, t, cfg, cs) })
}

// applier applies unstructured objects with server-side apply.
type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(t *testing.T, cfg *rest.Config) *applier {
	t.Helper()
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{dyn: dynamic.NewForConfigOrDie(cfg),
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}
}

func (a *applier) apply(ctx context.Context, t *testing.T, o *unstructured.Unstructured, dryRun bool) {
	t.Helper()
	gvk := o.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s %s: %v", gvk, o.GetName(), err)
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = a.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	}
	opts := metav1.ApplyOptions{FieldManager: "kubectl", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := ri.Apply(ctx, o.GetName(), o, opts); err != nil {
		t.Errorf("apply (dry run %v) %s %s/%s: %v", dryRun, gvk.Kind, o.GetNamespace(), o.GetName(), err)
	}
}

// renderObjects renders dir as unstructured objects.
func renderObjects(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	docs, err := splitDocuments(render(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(d, &u.Object); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	return objs
}

// checkSecretRole: as the agent's ServiceAccount, with the Role of the
// last applied overlays in secretsNamespace (resourceNames: the example's
// Secret), the example Secret can be read the agent's way and nothing else.
func checkSecretRole(ctx context.Context, t *testing.T, admin *rest.Config, cs kubernetes.Interface) {
	// The overlay applied last may have moved the grant elsewhere: apply
	// the default one again.
	a := newApplier(t, admin)
	for _, o := range renderObjects(t, ".") {
		a.apply(ctx, t, o, false)
	}
	const other = "calicovpp-ipsec-psk" // what Calico/VPP's guide puts beside the BGP passwords
	for _, name := range []string{exampleSecret, other} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: secretsNamespace}, StringData: map[string]string{"k": "v"}}
		if _, err := cs.CoreV1().Secrets(secretsNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	sa := rest.CopyConfig(admin)
	sa.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s", agentNamespace, serviceAccount),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + agentNamespace, "system:authenticated"}}
	secrets := kubernetes.NewForConfigOrDie(sa).CoreV1().Secrets(secretsNamespace)
	byName := func(n string) metav1.ListOptions {
		return metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", n).String()}
	}
	check := func(what string, err error, allowed bool) {
		t.Helper()
		switch {
		case allowed && err != nil:
			t.Errorf("%s: %v, want allowed", what, err)
		case !allowed && !apierrors.IsForbidden(err):
			t.Errorf("%s: %v, want 403", what, err)
		default:
			t.Logf("%s: allowed %v", what, allowed)
		}
	}
	_, err := secrets.Get(ctx, exampleSecret, metav1.GetOptions{})
	check("get "+exampleSecret, err, true)
	l, err := secrets.List(ctx, byName(exampleSecret))
	check("list metadata.name="+exampleSecret, err, true)
	if err == nil && (len(l.Items) != 1 || l.Items[0].Name != exampleSecret) {
		t.Errorf("list metadata.name=%s: %d items", exampleSecret, len(l.Items))
	}
	w, err := secrets.Watch(ctx, byName(exampleSecret))
	check("watch metadata.name="+exampleSecret, err, true)
	if err == nil {
		w.Stop()
	}
	// The watch-list form of client-go's reflector (sendInitialEvents).
	yes := true
	wl := byName(exampleSecret)
	wl.SendInitialEvents, wl.AllowWatchBookmarks, wl.ResourceVersionMatch = &yes, true, metav1.ResourceVersionMatchNotOlderThan
	w, err = secrets.Watch(ctx, wl)
	check("watch-list metadata.name="+exampleSecret, err, true)
	if err == nil {
		w.Stop()
	}
	_, err = secrets.Get(ctx, other, metav1.GetOptions{})
	check("get "+other, err, false)
	_, err = secrets.List(ctx, byName(other))
	check("list metadata.name="+other, err, false)
	_, err = secrets.Watch(ctx, byName(other))
	check("watch metadata.name="+other, err, false)
	_, err = secrets.List(ctx, metav1.ListOptions{})
	check("list every secret", err, false)
	_, err = secrets.Watch(ctx, metav1.ListOptions{})
	check("watch every secret", err, false)
	// A Role names Secrets of its own namespace only (calico/'s, applied
	// above, grants the same name in kube-system, not here).
	_, err = kubernetes.NewForConfigOrDie(sa).CoreV1().Secrets("default").List(ctx, byName(exampleSecret))
	check("list metadata.name="+exampleSecret+" in default", err, false)
}
