package e2e

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	clientretry "k8s.io/client-go/util/retry"

	"github.com/peeragent/peeragent/internal/testrig/kube"
	"github.com/peeragent/peeragent/watch"
	"github.com/peeragent/peeragent/watch/status"
)

// --- the cluster --------------------------------------------------------

// clusterEnv is a real API server and admin clients for one test.
type clusterEnv struct {
	t       *testing.T
	kc      *kube.Cluster
	ctx     context.Context
	cs      kubernetes.Interface
	dyn     dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	started time.Time
}

// clusterStart starts kube-apiserver and etcd (skipped under -short, and
// by kubetest when the binaries are missing: loudly, or a failure under
// CI=true) with opts, installs the CRDs of crdDirs and creates the
// agent's namespace from deploy/base/namespace.yaml and Calico/VPP's (the
// secrets namespace, which Calico's installation creates in a real
// cluster). budget bounds the whole test.
func clusterStart(t *testing.T, budget time.Duration, opts []kube.Option, crdDirs ...string) *clusterEnv {
	t.Helper()
	started := time.Now()
	kc := kube.Start(t, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	t.Cleanup(cancel)
	cfg := kc.RESTConfig()
	cs, dyn := kubeClients(t, cfg)
	e := &clusterEnv{t: t, kc: kc, ctx: ctx, cs: cs, dyn: dyn, started: started,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))}
	for _, d := range crdDirs {
		kc.InstallCRDs(t, d)
	}
	e.applyObjects(e.manifests(filepath.Join(clusterDeploy, "base", "namespace.yaml"))...)
	e.applyObjects(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": clusterNS}}})
	return e
}

// manifests decodes every object of a YAML file.
func (e *clusterEnv) manifests(path string) []*unstructured.Unstructured {
	e.t.Helper()
	f, err := os.Open(path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	return e.decodeManifests(path, f)
}

// manifestsFrom decodes every object of YAML text.
func (e *clusterEnv) manifestsFrom(text string) []*unstructured.Unstructured {
	e.t.Helper()
	return e.decodeManifests("text", strings.NewReader(text))
}

func (e *clusterEnv) decodeManifests(path string, f io.Reader) []*unstructured.Unstructured {
	e.t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			e.t.Fatalf("%s: %v", path, err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

// applyObjects creates each object, or replaces it when it exists.
func (e *clusterEnv) applyObjects(objs ...*unstructured.Unstructured) {
	e.t.Helper()
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			e.mapper.Reset()
			if m, err = e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				e.t.Fatalf("%s %s: %v", gvk.Kind, o.GetName(), err)
			}
		}
		var ri dynamic.ResourceInterface = e.dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = e.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		e.upsert(ri, o)
	}
}

// upsert creates o, or replaces the existing object of its name.
func (e *clusterEnv) upsert(ri dynamic.ResourceInterface, o *unstructured.Unstructured) {
	e.t.Helper()
	err := clientretry.RetryOnConflict(clientretry.DefaultRetry, func() error {
		_, err := ri.Create(e.ctx, o, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		old, err := ri.Get(e.ctx, o.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		o = o.DeepCopy()
		o.SetResourceVersion(old.GetResourceVersion())
		_, err = ri.Update(e.ctx, o, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

func clusterCalicoResource(group, kind string) schema.GroupVersionResource {
	gv, _ := schema.ParseGroupVersion(group)
	plural := strings.ToLower(kind) + "s"
	if strings.HasSuffix(plural, "ys") { // blockaffinity → blockaffinities
		plural = strings.TrimSuffix(plural, "ys") + "ies"
	}
	if strings.HasSuffix(plural, "ss") { // caliconodestatus → caliconodestatuses
		plural = strings.TrimSuffix(plural, "s") + "es"
	}
	return gv.WithResource(plural)
}

// putCalico creates or replaces a cluster-scoped Calico object of group.
func (e *clusterEnv) putCalico(group, kind, name string, spec map[string]any) {
	e.t.Helper()
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group, "kind": kind,
		"metadata": map[string]any{"name": name}, "spec": spec}}
	e.upsert(e.dyn.Resource(clusterCalicoResource(group, kind)), o)
}

func (e *clusterEnv) deleteCalico(group, kind, name string) {
	e.t.Helper()
	if err := e.dyn.Resource(clusterCalicoResource(group, kind)).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("delete %s %s: %v", kind, name, err)
	}
}

// putNode creates a Node with these labels and annotations.
func (e *clusterEnv) putNode(name string, labels, annotations map[string]string) {
	e.t.Helper()
	if labels == nil {
		labels = map[string]string{}
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}
	if _, err := e.cs.CoreV1().Nodes().Create(e.ctx, n, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create Node %s: %v", name, err)
	}
}

// editNode changes a Node (read, edit, update; again on a conflict).
func (e *clusterEnv) editNode(name string, edit func(*corev1.Node)) {
	e.t.Helper()
	err := clientretry.RetryOnConflict(clientretry.DefaultRetry, func() error {
		n, err := e.cs.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		edit(n)
		_, err = e.cs.CoreV1().Nodes().Update(e.ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("edit Node %s: %v", name, err)
	}
}

func (e *clusterEnv) deleteNode(name string) {
	e.t.Helper()
	if err := e.cs.CoreV1().Nodes().Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("delete Node %s: %v", name, err)
	}
}

// putSecret creates or replaces a Secret's data.
func (e *clusterEnv) putSecret(ns, name string, data map[string]string) {
	e.t.Helper()
	bin := map[string][]byte{}
	for k, v := range data {
		bin[k] = []byte(v)
	}
	secrets := e.cs.CoreV1().Secrets(ns)
	err := clientretry.RetryOnConflict(clientretry.DefaultRetry, func() error {
		s, err := secrets.Get(e.ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = secrets.Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: bin}, metav1.CreateOptions{})
			return err
		} else if err != nil {
			return err
		}
		s.Data = bin
		_, err = secrets.Update(e.ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("put Secret %s/%s: %v", ns, name, err)
	}
}

// checkServiceAccount shows what the ServiceAccount of deploy/ may do with
// deploy/base/rbac.yaml: read the Calico objects, Nodes and the Secrets of the
// secrets namespace; not read Secrets elsewhere, not write.
func (e *clusterEnv) checkServiceAccount(cfg *rest.Config, group, elsewhere string) {
	e.t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	peers := dyn.Resource(clusterCalicoResource(group, "BGPPeer"))
	_, errNodes := cs.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{})
	_, errPeers := peers.List(e.ctx, metav1.ListOptions{})
	_, errHome := cs.CoreV1().Secrets(clusterNS).Get(e.ctx, clusterGrantedSecret, metav1.GetOptions{})
	_, errAway := cs.CoreV1().Secrets(elsewhere).Get(e.ctx, clusterGrantedSecret, metav1.GetOptions{})
	_, errAll := cs.CoreV1().Secrets("").List(e.ctx, metav1.ListOptions{})
	bogus := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group, "kind": "BGPPeer",
		"metadata": map[string]any{"name": "not-allowed"}, "spec": map[string]any{"peerIP": "127.0.0.99", "asNumber": int64(65099)}}}
	_, errWrite := peers.Create(e.ctx, bogus, metav1.CreateOptions{})
	if errNodes != nil || errPeers != nil || errHome != nil {
		e.t.Fatalf("the ServiceAccount cannot read what it needs: nodes %v, bgppeers %v, secret %s/%s %v", errNodes, errPeers, clusterNS, clusterGrantedSecret, errHome)
	}
	if !apierrors.IsForbidden(errAway) || !apierrors.IsForbidden(errAll) || !apierrors.IsForbidden(errWrite) {
		e.t.Fatalf("the ServiceAccount may do more than deploy/base/rbac.yaml says: secret %s/%s %v, all secrets %v, create BGPPeer %v",
			elsewhere, clusterGrantedSecret, errAway, errAll, errWrite)
	}
	e.t.Logf("as system:serviceaccount:%s:%s: nodes, bgppeers and secret %s/%s readable; secret %s/%[4]s, all secrets and creating a BGPPeer: 403",
		clusterAgentNS, clusterSA, clusterNS, clusterGrantedSecret, elsewhere)
}

// startReporter runs the status reporter as run makes it for
// --report-status (watch/status, Events through its own recorder) with a
// 1 s Event gap, until the test ends.
func (e *clusterEnv) startReporter(group string) *status.Reporter {
	e.t.Helper()
	tc, err := watch.NewTypedClient(e.kc.RESTConfig()) // as run.go's newKubeClients
	if err != nil {
		e.t.Fatal(err)
	}
	rep, err := status.New(status.Config{Dynamic: e.dyn, Events: tc.Events(), Group: group, Node: clusterNode, Version: "e2e", EventGap: time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	go func() { rep.Run(ctx); close(done) }()
	e.t.Cleanup(func() { cancel(); <-done })
	return rep
}

// kubeClients are the typed and dynamic clients over cfg.
func kubeClients(t testing.TB, cfg *rest.Config) (*kubernetes.Clientset, *dynamic.DynamicClient) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs, dyn
}
