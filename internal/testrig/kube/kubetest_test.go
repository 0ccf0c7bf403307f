package kube

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestCluster drives one real cluster through what the cluster tests need:
// admin access, a ServiceAccount refused without RBAC, a CRD and an object
// of it, and a kube-apiserver restart that clients survive.
func TestCluster(t *testing.T) {
	c := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := clientset(t, c.RESTConfig())

	mustCreate(t, ctx, admin)
	got, err := admin.CoreV1().ServiceAccounts("kt").Get(ctx, "agent", metav1.GetOptions{})
	if err != nil || got.Name != "agent" {
		t.Fatalf("admin reads the ServiceAccount: %v, %v", got, err)
	}

	sa := clientset(t, c.ConfigFor("kt", "agent"))
	_, err = sa.CoreV1().ServiceAccounts("kt").Get(ctx, "agent", metav1.GetOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("ServiceAccount without RBAC: got %v, want 403 Forbidden", err)
	}

	c.InstallCRDs(t, "testdata/crds")
	widgets := widgetClient(t, c.RESTConfig())
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubetest.peeragent.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1"}, "spec": map[string]any{"size": int64(3)},
	}}
	if _, err := widgets.Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Widget: %v", err)
	}

	if err := c.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	list, err := widgets.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list Widgets after restart (same client): %v items, %v", itemCount(list), err)
	}
}

// TestStopRefusesThenRestartServes: between Stop and Restart, clients are
// refused; afterwards the same client works again.
func TestStopRefusesThenRestartServes(t *testing.T) {
	c := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := clientset(t, c.RESTConfig())
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("list with kube-apiserver stopped: no error")
	}
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("get after restart: %v", err)
	}
}

func mustCreate(t *testing.T, ctx context.Context, cs kubernetes.Interface) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kt"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Namespace: %v", err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "agent"}}
	if _, err := cs.CoreV1().ServiceAccounts("kt").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ServiceAccount: %v", err)
	}
}

func clientset(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func widgetClient(t *testing.T, cfg *rest.Config) dynamic.ResourceInterface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "kubetest.peeragent.io", Version: "v1", Resource: "widgets"}
	return dyn.Resource(gvr).Namespace("kt")
}

func itemCount(l *unstructured.UnstructuredList) int {
	if l == nil {
		return -1
	}
	return len(l.Items)
}

// TestVersionsMatchBuildModule keeps K8sVersion and EtcdVersion equal to
// what tools/apiserver/go.mod builds, so Find looks where build.sh writes.
func TestVersionsMatchBuildModule(t *testing.T) {
	data, err := os.ReadFile("../../../tools/apiserver/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for mod, want := range map[string]string{"k8s.io/kubernetes": K8sVersion, "go.etcd.io/etcd/server/v3": EtcdVersion} {
		re := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(mod) + `\s+(v\S+)`)
		have := ""
		if m := re.FindSubmatch(data); m != nil {
			have = string(m[1])
		}
		if have != want {
			t.Errorf("tools/apiserver/go.mod has %s %q; kubetest expects %s", mod, have, want)
		}
	}
}

func TestFindReportsMissingBinaries(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KUBEBUILDER_ASSETS", dir)
	if _, err := find(); err == nil || !strings.Contains(err.Error(), "kube-apiserver") {
		t.Fatalf("find in an empty KUBEBUILDER_ASSETS: %v, want kube-apiserver missing", err)
	}
}

func TestCacheDirFollowsPeeragentCache(t *testing.T) {
	t.Setenv("PEERAGENT_CACHE", "/x")
	got, err := CacheDir()
	want := "/x/apiserver-" + K8sVersion + "-etcd-" + EtcdVersion
	if err != nil || got != want {
		t.Fatalf("CacheDir() = %q, %v; want %q", got, err, want)
	}
}
