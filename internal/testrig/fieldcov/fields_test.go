package fieldcov

import (
	"reflect"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// TestChangeChangesEveryNeighborField: the guards rely on Change producing
// a different value for every field of state.Neighbor.
func TestChangeChangesEveryNeighborField(t *testing.T) {
	base := state.Neighbor{Families: []string{"ipv4-unicast", "ipv6-unicast"}}
	for _, f := range Of(base) {
		got := Changed(base, f.Name)
		if reflect.DeepEqual(got, base) {
			t.Errorf("Changed(%s) left the neighbor equal", f.Name)
		}
	}
	if len(base.Families) != 2 {
		t.Errorf("Changed modified base: %v", base.Families)
	}
}
