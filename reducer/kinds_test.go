package reducer

import (
	"testing"

	"github.com/peeragent/peeragent/state"
)

// TestReducerTakesEveryInputKind: reduceInput has a case for every
// state.InputKind, and that case takes the kind's own upsert, deletion and
// complete list, so a kind declared in state and forgotten (or miswired)
// here fails instead of its actions being dropped.
func TestReducerTakesEveryInputKind(t *testing.T) {
	for _, k := range state.InputKinds {
		upsert, del := k.ActionNames()
		for _, name := range []string{upsert, del} {
			a, err := state.DecodeAction([]byte(`{"` + name + `":{}}`))
			if err != nil {
				t.Fatal(err)
			}
			if !newTx().reduceInput(k.Kind(), a) {
				t.Errorf("kind %s: reduceInput does not take %s", k.Kind(), name)
			}
		}
		if !newTx().reduceInput(k.Kind(), state.SourceSynced{Kind: k.Kind()}) {
			t.Errorf("kind %s: reduceInput does not take its complete list", k.Kind())
		}
	}
	if newTx().reduceInput(state.KindBGPPeer, state.NodeDeleted{Name: "n"}) {
		t.Error("reduceInput takes an action of another kind")
	}
}

func newTx() *tx { // a step on an empty State
	s := state.New("node-a", state.Options{})
	return &tx{s: s, dirty: map[string]struct{}{}}
}

// TestInputStepAllocations: an upsert that changes nothing allocates only
// the step's dirty set and the upserted object's copy. More means the
// step's tx (the size of a State) went to the heap: reduceInput's calls
// must stay static (its doc).
func TestInputStepAllocations(t *testing.T) {
	s := state.New("node-a", state.Options{})
	var a state.Action = state.NodeUpserted{Node: state.Node{Name: "node-b"}}
	s = Reduce(s, a)
	if n := testing.AllocsPerRun(100, func() { Reduce(s, a) }); n > 2 {
		t.Errorf("a no-op upsert allocates %v times, want at most 2", n)
	}
}
