package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

// crdTimeout bounds InstallCRDs' wait for the CRDs to be served.
const crdTimeout = 60 * time.Second

var crdGVR = schema.GroupVersionResource{
	Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions",
}

// InstallCRDs creates (or updates) every CustomResourceDefinition in the
// .yaml, .yml and .json files of dir (several documents per file are fine;
// other kinds are ignored) and waits until each is Established and its
// resources can be listed in every served version. It fails t on any error.
func (c *Cluster) InstallCRDs(t testing.TB, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), crdTimeout)
	defer cancel()
	names, err := c.ApplyCRDs(ctx, dir)
	if err != nil {
		t.Fatalf("kubetest: install CRDs from %s: %v", dir, err)
	}
	t.Logf("kubetest: installed %d CRDs from %s: %s", len(names), dir, strings.Join(names, ", "))
}

// ApplyCRDs is InstallCRDs returning the CRD names, or its error.
func (c *Cluster) ApplyCRDs(ctx context.Context, dir string) ([]string, error) {
	crds, err := readCRDs(dir)
	if err != nil {
		return nil, err
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinition in %s", dir)
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(crds))
	for _, crd := range crds {
		if err := applyCRD(ctx, dyn, crd); err != nil {
			return nil, fmt.Errorf("CRD %s: %w", crd.GetName(), err)
		}
		names = append(names, crd.GetName())
	}
	for _, crd := range crds {
		if err := waitServed(ctx, dyn, crd); err != nil {
			return nil, fmt.Errorf("CRD %s: %w", crd.GetName(), err)
		}
	}
	return names, nil
}

// readCRDs decodes the CRD documents of dir's files, in file-name order.
func readCRDs(dir string) ([]*unstructured.Unstructured, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
	}
	sort.Strings(files)
	var crds []*unstructured.Unstructured
	for _, f := range files {
		got, err := readCRDFile(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		crds = append(crds, got...)
	}
	return crds, nil
}

func readCRDFile(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var crds []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return crds, nil
		} else if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetAPIVersion() == "apiextensions.k8s.io/v1" && u.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, u)
		}
	}
}

// applyCRD creates crd, or replaces the existing one of that name.
func applyCRD(ctx context.Context, dyn dynamic.Interface, crd *unstructured.Unstructured) error {
	client := dyn.Resource(crdGVR)
	_, err := client.Create(ctx, crd, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	old, err := client.Get(ctx, crd.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	crd = crd.DeepCopy()
	crd.SetResourceVersion(old.GetResourceVersion())
	_, err = client.Update(ctx, crd, metav1.UpdateOptions{})
	return err
}

// waitServed waits for the Established condition, then for a list of the
// custom resource to work in each served version.
func waitServed(ctx context.Context, dyn dynamic.Interface, crd *unstructured.Unstructured) error {
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := dyn.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return established(got), nil
	})
	if err != nil {
		return fmt.Errorf("not Established: %w", err)
	}
	for _, gvr := range servedGVRs(crd) {
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
			return err == nil, nil
		})
		if err != nil {
			return fmt.Errorf("%s not served: %w", gvr, err)
		}
	}
	return nil
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

func servedGVRs(crd *unstructured.Unstructured) []schema.GroupVersionResource {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var gvrs []schema.GroupVersionResource
	for _, v := range versions {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		if served, _ := m["served"].(bool); served && name != "" {
			gvrs = append(gvrs, schema.GroupVersionResource{Group: group, Version: name, Resource: plural})
		}
	}
	return gvrs
}
