package fieldcov

import (
	"reflect"
	"testing"
	"time"

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

// TestLeavesAndWithLeaf: the walk reaches nested leaves through pointers,
// slices of structs and map keys, and WithLeaf sets exactly the leaf named
// (WithContainersAny leaves it zero).
func TestLeavesAndWithLeaf(t *testing.T) {
	type inner struct {
		A string
		B *int32
	}
	type outer struct {
		P     *inner
		L     []inner
		M     map[string]string
		S     []string
		Plain bool
	}
	got := Leaves(outer{}, "P", "L", "M[k.with/dots]", "S", "Plain")
	want := []string{"P.A", "P.B", "L[].A", "L[].B", "M[k.with/dots]", "S", "Plain"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Leaves = %q, want %q", got, want)
	}
	o := WithLeafAny(outer{}, "L[].B").(outer)
	if len(o.L) != 1 || o.L[0].B == nil || *o.L[0].B == 0 || o.L[0].A != "" || o.P != nil {
		t.Errorf("WithLeafAny(L[].B) = %+v", o)
	}
	c := WithContainersAny(outer{}, "L[].B").(outer)
	if len(c.L) != 1 || c.L[0].B != nil {
		t.Errorf("WithContainersAny(L[].B) = %+v, want one zero element", c)
	}
	m := WithLeaf(outer{}, "M[k.with/dots]")
	if m.M["k.with/dots"] != "x" || len(m.M) != 1 {
		t.Errorf("WithLeaf(M[k.with/dots]) = %v", m.M)
	}
	if p := WithContainersAny(outer{}, "P.B").(outer); p.P == nil || p.P.B != nil {
		t.Errorf("WithContainersAny(P.B) = %+v, want P made and B nil", p.P)
	}
}

// TestFill: Fill sets every exported field, through pointers, slices and
// maps, where NonZero sets a struct's first field only; a struct with no
// exported field (time.Time) stays zero.
func TestFill(t *testing.T) {
	type inner struct{ X, Y int }
	type outer struct {
		A string
		B *inner
		C []inner
		D map[string]inner
		E time.Time
		f int
	}
	var got outer
	Fill(reflect.ValueOf(&got).Elem())
	want := outer{A: "x", B: &inner{1, 1}, C: []inner{{1, 1}}, D: map[string]inner{"x": {1, 1}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Fill = %+v, want %+v", got, want)
	}
	var first outer
	NonZero(reflect.ValueOf(&first).Elem())
	if !reflect.DeepEqual(first, outer{A: "x"}) {
		t.Errorf("NonZero = %+v, want only A set", first)
	}
}
