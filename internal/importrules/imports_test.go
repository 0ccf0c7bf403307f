// Package importrules enforces the dependency rules of docs/design.md: the pure
// core (state, selector, reducer, effects without its executors) never
// depends on client-go, Calico, GoBGP or govpp.
package importrules

import (
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

var forbidden = []string{
	"k8s.io/", "sigs.k8s.io/controller-runtime", "github.com/projectcalico/",
	"github.com/osrg/gobgp", "go.fd.io/govpp",
}

func TestPureCoreImports(t *testing.T) {
	for _, pkg := range []string{"state", "selector", "reducer", "effects", "state/pmap", "agent"} {
		t.Run(pkg, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "github.com/peeragent/peeragent/"+pkg).CombinedOutput()
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, out)
			}
			deps := strings.Fields(string(out))
			if len(deps) < 2 {
				t.Fatalf("go list returned no dependencies: %q", out)
			}
			for _, d := range deps {
				for _, f := range forbidden {
					if strings.HasPrefix(d, f) {
						t.Errorf("%s depends on %s", pkg, d)
					}
				}
			}
		})
	}
}

// TestSelectorIsStdlibOnly: the selector is ours, fuzzed, and small.
func TestSelectorIsStdlibOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}",
		"github.com/peeragent/peeragent/selector").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, d := range strings.Fields(string(out)) {
		if d != "github.com/peeragent/peeragent/selector" {
			t.Errorf("selector depends on non-standard package %s", d)
		}
	}
}

// TestProductionImportsNoTestRig: test rigs (internal/testrig) and developer
// tools (tools/) are for tests and people; nothing the binary is built from
// may import them.
func TestProductionImportsNoTestRig(t *testing.T) {
	agentLinksNone(t, agentDeps(t), "github.com/peeragent/peeragent/internal/testrig", "github.com/peeragent/peeragent/tools")
}

// TestAgentLinksNoFullClientset: the agent reads two built-in API groups
// (core/v1, discovery/v1) through watch.TypedClient; client-go's full
// clientset, its typed clients (whose scheme registers every group at
// start), the informer factories and the discovery client would link
// every group's types and clients (docs/performance.md "What the binary
// maps"). Only core/v1 and discovery/v1 of k8s.io/api, and what
// projectcalico/api's types embed (networking/v1), may be linked.
func TestAgentLinksNoFullClientset(t *testing.T) {
	deps := agentDeps(t)
	agentLinksNone(t, deps, "k8s.io/client-go/kubernetes", "k8s.io/client-go/informers", "k8s.io/client-go/discovery",
		"k8s.io/client-go/applyconfigurations", "k8s.io/client-go/dynamic/dynamicinformer")
	apis := map[string]bool{"k8s.io/api/core/v1": true, "k8s.io/api/discovery/v1": true, "k8s.io/api/networking/v1": true}
	for _, d := range deps {
		if strings.HasPrefix(d, "k8s.io/api/") && !apis[d] {
			t.Errorf("the agent binary depends on %s", d)
		}
	}
}

// TestAgentLinksNoOpenAPI: nothing the agent runs reads OpenAPI documents,
// applies server-side, patches strategically or fakes a cluster, yet
// client-go's generic typed client (gentype, which holds its fakes and so
// client-go/testing with server-side apply's managed fields) and its
// Event recorder (tools/record, which patches repeated Events
// strategically) link kube-openapi's models and parsers, the gnostic
// OpenAPI v2/v3 models with their protobuf descriptors, go-openapi and
// structured-merge-diff's typed tree, and run their package inits
// (docs/performance.md "What the binary maps"). watch.TypedClient makes
// the typed requests itself and watch/status has its own recorder.
func TestAgentLinksNoOpenAPI(t *testing.T) {
	agentLinksNone(t, agentDeps(t), "k8s.io/client-go/gentype", "k8s.io/client-go/testing", "k8s.io/client-go/tools/record",
		"k8s.io/apimachinery/pkg/util/managedfields", "k8s.io/apimachinery/pkg/util/strategicpatch",
		"github.com/google/gnostic-models", "github.com/go-openapi", "k8s.io/kube-openapi/pkg/util/proto",
		"k8s.io/kube-openapi/pkg/validation", "k8s.io/kube-openapi/pkg/schemaconv",
		"sigs.k8s.io/structured-merge-diff/v6/typed", "sigs.k8s.io/structured-merge-diff/v6/merge")
}

// TestAgentLinksOneYAMLv3: go-yaml v3 is in the binary once. GoBGP links
// gopkg.in/yaml.v3 (through viper, from its config package), and the
// manifest directory's alias bound (watch/files_bound.go) parses with the
// same; its successor go.yaml.in/yaml/v3 is the same parser under another
// path, 0.2 MB more code and another package init (docs/performance.md
// "What the binary maps").
func TestAgentLinksOneYAMLv3(t *testing.T) {
	deps := agentDeps(t)
	if !slices.Contains(deps, "gopkg.in/yaml.v3") {
		t.Errorf("the agent binary no longer links gopkg.in/yaml.v3 (GoBGP moved?): let watch/files_bound.go follow it; deps %q", deps)
	}
	if slices.Contains(deps, "go.yaml.in/yaml/v3") {
		t.Errorf("the agent binary links both gopkg.in/yaml.v3 and go.yaml.in/yaml/v3")
	}
}

// agentDeps lists the packages the agent binary is built from (go list
// -deps of cmd/peeragent), once for every test of the package.
var agentDeps = func() func(t *testing.T) []string {
	list := sync.OnceValues(func() ([]byte, error) {
		return exec.Command("go", "list", "-deps", "github.com/peeragent/peeragent/cmd/peeragent").CombinedOutput()
	})
	return func(t *testing.T) []string {
		t.Helper()
		out, err := list()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 100 {
			t.Fatalf("go list returned too few dependencies: %q", out)
		}
		return deps
	}
}()

// agentLinksNone fails t for every package of deps that is one of paths or
// inside one of them.
func agentLinksNone(t *testing.T, deps []string, paths ...string) {
	t.Helper()
	for _, d := range deps {
		for _, f := range paths {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("the agent binary depends on %s", d)
			}
		}
	}
}
