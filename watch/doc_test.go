package watch

import (
	"os"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// TestDocListsEveryKind: doc.go names every kind a source reads, as
// "Kind (state.Kind)": the manifest decoder's kinds (the directory source
// reads every kind the cluster source watches), which are every declared
// input kind (state.InputKinds).
func TestDocListsEveryKind(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(strings.ReplaceAll(string(doc), "//", "")), " ")
	kinds := map[state.Kind]string{}
	for key, mk := range manifestKinds {
		kinds[mk.kind] = key[strings.LastIndex(key, "/")+1:]
	}
	for _, k := range state.InputKinds {
		if _, ok := kinds[k.Kind()]; !ok {
			t.Errorf("input kind %s is not a manifest kind", k.Kind())
		}
	}
	for k, name := range kinds {
		if !strings.Contains(text, name+" ("+string(k)) {
			t.Errorf("watch/doc.go does not list %s (%s)", name, k)
		}
	}
	if len(kinds) != len(state.InputKinds) || len(kinds) != 10 || !strings.Contains(text, "same ten kinds") {
		t.Errorf("%d kinds; doc.go says ten", len(kinds))
	}
}
