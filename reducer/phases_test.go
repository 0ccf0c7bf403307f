package reducer

import (
	"testing"

	"github.com/peeragent/peeragent/state"
)

// TestLifecycleUsesEveryPhase: the table and state.Phases list the same
// phases, so a phase added to one and forgotten in the other fails here.
func TestLifecycleUsesEveryPhase(t *testing.T) {
	inTable := map[string]bool{}
	for _, e := range Lifecycle {
		inTable[e.Dst] = true
		for _, s := range e.Src {
			inTable[s] = true
		}
	}
	known := map[string]bool{}
	for _, p := range state.Phases() {
		known[p.String()] = true
		if !inTable[p.String()] {
			t.Errorf("phase %s is in no row of the lifecycle table", p)
		}
	}
	for p := range inTable {
		if !known[p] {
			t.Errorf("the lifecycle table uses %q, which state.Phases does not list", p)
		}
	}
}
