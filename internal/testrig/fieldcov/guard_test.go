package fieldcov

import (
	"fmt"
	"slices"
	"testing"
)

// recorder is a testing.TB that records what Errorf and Fatalf say.
type recorder struct {
	testing.TB
	said []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.said = append(r.said, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

type triple struct {
	A string `json:"a"`
	B string `json:"b"`
	C string `json:"c"`
}

// TestGuardsFail: each guard says which field a comparison or a form
// forgets, or notices or has against its list, and which listed name is
// no field.
func TestGuardsFail(t *testing.T) {
	base := triple{A: "a", B: "b", C: "c"}
	r := &recorder{TB: t}
	Equal(r, base, func(x, y *triple) bool { return *x == *y }, "triple.go")
	Equal(r, base, func(x, y *triple) bool { return x.A == y.A && x.B == y.B }, "triple.go")
	Ignores(r, base, map[string]string{"A": "why", "C": "why not", "Y": "gone"}, "SameB", "compare it",
		func(changed triple) bool { return changed.A != base.A })
	Form[triple]{
		What: "the form", Fix: "add it", Names: map[string]bool{"a": true, "b": true, "z": true},
		Omitted: map[string]string{"A": "why", "Y": "gone"},
		Shows: func(changed triple, f Field) error {
			if f.Name == "B" {
				return fmt.Errorf("stays %q", changed.B[:1])
			}
			return nil
		},
	}.Check(r, base)
	want := []string{
		"SameB ignores B: compare it, or list it as ignored, with why",
		"SameB notices A, listed as ignored (why)",
		"SameB's ignored fields name Y, which fieldcov.triple no longer has",
		"fieldcov.triple.Equal ignores C: compare it in Equal (triple.go)",
		"the form does not follow a change of B (stays \"b\"): add it, or list it as omitted, with why",
		"the form has \"z\", which is no field of fieldcov.triple (its json name)",
		"the form has A, also listed as omitted (why): pick one",
		"the form lacks C (\"c\"): add it, or list it as omitted, with why",
		"the form's omitted fields name Y, which fieldcov.triple no longer has",
	}
	if slices.Sort(r.said); !slices.Equal(r.said, want) {
		t.Errorf("the guards said\n%q\nwant\n%q", r.said, want)
	}
	if got := JSONNames(triple{}); len(got) != 3 || !got["a"] || !got["b"] || !got["c"] {
		t.Errorf("JSONNames = %v", got)
	}
}
