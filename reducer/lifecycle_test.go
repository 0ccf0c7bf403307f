package reducer

import (
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/peeragent/peeragent/state"
)

var updateLifecycle = flag.Bool("update", false, "rewrite testdata/lifecycle.mmd")

// TestLifecycleMermaid pins the lifecycle table's mermaid rendering, so a
// change to the table shows up as a reviewed diff.
func TestLifecycleMermaid(t *testing.T) {
	got, err := Mermaid()
	if err != nil {
		t.Fatal(err)
	}
	const path = "testdata/lifecycle.mmd"
	if *updateLifecycle {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./reducer -run TestLifecycleMermaid -update)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("lifecycle diagram differs (-want +got):\n%s", d)
	}
}

func TestLifecycleTransitions(t *testing.T) {
	cases := []struct {
		name string
		from state.Phase
		ev   string
		want state.Phase
		ok   bool
	}{
		{"new-configure", pNew, evConfigure, pConfiguring, true},
		{"new-hold", pNew, evHold, pWaiting, true},
		{"waiting-configure", pWaiting, evConfigure, pConfiguring, true},
		{"configuring-applied", pConfiguring, evApplied, pConfigured, true},
		{"configured-up", pConfigured, evUp, pEstablished, true},
		{"established-down", pEstablished, evDown, pConfigured, true},
		{"established-update", pEstablished, evUpdate, pUpdating, true},
		{"updating-applied", pUpdating, evApplied, pConfigured, true},
		{"configuring-fail", pConfiguring, evFail, pFail, true},
		{"failed-applied", pFail, evApplied, pConfigured, true},
		{"established-delete", pEstablished, evDelete, pDeleting, true},
		{"deleting-fail", pDeleting, evFail, pFail, true},
		{"waiting-up-ignored", pWaiting, evUp, pWaiting, false},
		{"configured-applied-ignored", pConfigured, evApplied, pConfigured, false},
		{"new-delete-ignored", pNew, evDelete, pNew, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := fire(c.from, c.ev)
			if got != c.want || ok != c.ok {
				t.Errorf("fire(%s, %s) = %s, %v; want %s, %v", c.from, c.ev, got, ok, c.want, c.ok)
			}
		})
	}
}
