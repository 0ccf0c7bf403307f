package reducer

import (
	"testing"

	"github.com/peeragent/peeragent/state"
)

// TestReducerTakesEveryInputKind: every state.InputKind has its upsert and
// delete here (inputList), once, so a kind declared in state and forgotten
// here fails instead of being dropped as an unknown action.
func TestReducerTakesEveryInputKind(t *testing.T) {
	if len(inputList) != len(state.InputKinds) || len(inputsByKind) != len(inputList) {
		t.Errorf("%d inputs (%d kinds) for %d state.InputKinds", len(inputList), len(inputsByKind), len(state.InputKinds))
	}
	for _, k := range state.InputKinds {
		in := inputsByKind[k.Kind()]
		if in == nil {
			t.Errorf("kind %s has no input in inputList", k.Kind())
			continue
		}
		u, d := k.ActionNames()
		if inputs[u] != in || inputs[d] != in {
			t.Errorf("kind %s: %s or %s is not reduced by its input", k.Kind(), u, d)
		}
	}
}
