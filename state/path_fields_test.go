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
	fieldcov.Equal(t, fullPath(), (*state.Path).Equal, "state/paths.go")
}

func TestPathSameAttrsIgnoresOnlyBookkeeping(t *testing.T) {
	base := fullPath()
	fieldcov.Ignores(t, base, pathBookkeeping, "SameAttrs", "an attribute the speaker sends must count (state/paths.go)",
		func(changed state.Path) bool { return !base.SameAttrs(&changed) })
}
