package state_test

import (
	"net/netip"
	"testing"

	"github.com/peeragent/peeragent/internal/testrig/fieldcov"
	"github.com/peeragent/peeragent/state"
)

// The field-coverage guards of state.Path's comparisons, as
// neighbor_fields_test.go's: a path attribute forgotten in SameAttrs would
// never reach the speaker when it changes (effects.Diff compares paths
// with it).

func fullPath() state.Path {
	return state.Path{Prefix: netip.MustParsePrefix("10.244.1.0/26"), NextHop: netip.MustParseAddr("10.0.0.1"),
		Communities: []string{"65000:100", "65000:0:7"}, Origins: []string{"blockaffinity/a", "pod/ns/p"}}
}

// pathBookkeeping are the fields SameAttrs ignores, with why.
var pathBookkeeping = map[string]string{
	"Origins": "which objects produce the path; a change of origins alone needs no call (docs/routes.md §8.1 rule 7)",
}

func TestPathEqualCoversEveryField(t *testing.T) {
	base := fullPath()
	if !base.Equal(&base) {
		t.Fatal("a path is not Equal to itself")
	}
	for _, f := range fieldcov.Of(base) {
		changed := fieldcov.Changed(base, f.Name)
		if base.Equal(&changed) || changed.Equal(&base) {
			t.Errorf("Path.Equal ignores %s: compare it in Equal (state/paths.go)", f.Name)
		}
	}
}

func TestPathSameAttrsIgnoresOnlyBookkeeping(t *testing.T) {
	base := fullPath()
	seen := map[string]bool{}
	for _, f := range fieldcov.Of(base) {
		seen[f.Name] = true
		changed := fieldcov.Changed(base, f.Name)
		same := base.SameAttrs(&changed)
		why, book := pathBookkeeping[f.Name]
		switch {
		case book && !same:
			t.Errorf("SameAttrs notices %s, a bookkeeping field (%s)", f.Name, why)
		case !book && same:
			t.Errorf("SameAttrs ignores %s: an attribute the speaker sends must count (state/paths.go), "+
				"or list it in pathBookkeeping with why", f.Name)
		}
	}
	for name := range pathBookkeeping {
		if !seen[name] {
			t.Errorf("pathBookkeeping names %s, which state.Path no longer has", name)
		}
	}
}
