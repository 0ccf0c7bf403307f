// Package importrules enforces the dependency rules of docs/design.md: the pure
// core (state, selector, reducer, effects without its executors) never
// depends on client-go, Calico, GoBGP or govpp.
package importrules

import (
	"os/exec"
	"strings"
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
	out, err := exec.Command("go", "list", "-deps", "github.com/peeragent/peeragent/cmd/peeragent").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, d := range strings.Fields(string(out)) {
		for _, f := range []string{"github.com/peeragent/peeragent/internal/testrig", "github.com/peeragent/peeragent/tools/"} {
			if strings.HasPrefix(d, f) {
				t.Errorf("the agent binary depends on %s", d)
			}
		}
	}
}
