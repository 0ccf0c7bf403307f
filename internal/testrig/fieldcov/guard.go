package fieldcov

import "testing"

// Equal is the guard of a hand-written Equal of T: it must hold for base
// with itself, and fail, both ways round, for base with any one field
// changed, or a change of that field would go unseen. fix is the file
// whose Equal compares T's fields ("state/neighbor.go").
func Equal[T any](t testing.TB, base T, equal func(a, b *T) bool, fix string) {
	t.Helper()
	if !equal(&base, &base) {
		t.Fatalf("%T.Equal: a value is not Equal to itself", base)
	}
	for _, f := range Of(base) {
		changed := Changed(base, f.Name)
		if equal(&base, &changed) || equal(&changed, &base) {
			t.Errorf("%T.Equal ignores %s: compare it in Equal (%s)", base, f.Name, fix)
		}
	}
}

// Ignores is the guard of a comparison that must notice a change of every
// field of T but those in ignored (field name → why it may be ignored):
// with each field of base changed alone, noticed(changed) must be false
// exactly for the ignored ones, and each name in ignored must still be a
// field of T. what names the comparison in the messages ("SameAttrs"),
// and fix says where a field it ignores by mistake belongs.
func Ignores[T any](t testing.TB, base T, ignored map[string]string, what, fix string, noticed func(changed T) bool) {
	t.Helper()
	seen := map[string]bool{}
	for _, f := range Of(base) {
		seen[f.Name] = true
		why, listed := ignored[f.Name]
		switch n := noticed(Changed(base, f.Name)); {
		case listed && n:
			t.Errorf("%s notices %s, listed as ignored (%s)", what, f.Name, why)
		case !listed && !n:
			t.Errorf("%s ignores %s: %s, or list it as ignored, with why", what, f.Name, fix)
		}
	}
	for name := range ignored {
		if !seen[name] {
			t.Errorf("%s's ignored fields name %s, which %T no longer has", what, name, base)
		}
	}
}

// Form is the guard of a hand-written form of T that lists T's fields by
// their JSON names: a table (effects' classify table) or an output type
// (the plan's PlanNeighbor). Every field of T but those Omitted must be in
// Names and shown, an omitted one must not be in Names, each name in
// Names must be a field of T's, and each omitted one still a field of T.
type Form[T any] struct {
	What    string            // the form, in messages: "the plan"
	Fix     string            // where a field missing from the form belongs
	Names   map[string]bool   // the JSON names of the fields the form has (JSONNames)
	Omitted map[string]string // the fields of T (Go names) the form leaves out, and why
	// Shows says whether the form follows a change of field f alone, in
	// changed: nil, or what it does instead.
	Shows func(changed T, f Field) error
}

// Check runs the guard on base, a T with a value in every field the form
// shows.
func (g Form[T]) Check(t testing.TB, base T) {
	t.Helper()
	known := map[string]bool{}
	for _, f := range Of(base) {
		known[f.Name], known[f.JSON] = true, true
		if why, ok := g.Omitted[f.Name]; ok {
			if g.Names[f.JSON] {
				t.Errorf("%s has %s, also listed as omitted (%s): pick one", g.What, f.Name, why)
			}
			continue
		}
		if !g.Names[f.JSON] {
			t.Errorf("%s lacks %s (%q): %s, or list it as omitted, with why", g.What, f.Name, f.JSON, g.Fix)
		} else if err := g.Shows(Changed(base, f.Name), f); err != nil {
			t.Errorf("%s does not follow a change of %s (%v): %s, or list it as omitted, with why", g.What, f.Name, err, g.Fix)
		}
	}
	for name := range g.Names {
		if !known[name] {
			t.Errorf("%s has %q, which is no field of %T (its json name)", g.What, name, base)
		}
	}
	for name := range g.Omitted {
		if !known[name] {
			t.Errorf("%s's omitted fields name %s, which %T no longer has", g.What, name, base)
		}
	}
}

// JSONNames are the JSON names of the fields of v's struct type (Of).
func JSONNames(v any) map[string]bool {
	out := map[string]bool{}
	for _, f := range Of(v) {
		out[f.JSON] = true
	}
	return out
}
