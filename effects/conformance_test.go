package effects_test

import (
	"testing"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/dataplane"
)

// TestNoDataplaneConformance: --dataplane none runs the dataplane
// conformance suite, without a table: every route skipped, every rescan
// empty (docs/design.md "Adding a dataplane").
func TestNoDataplaneConformance(t *testing.T) {
	dataplane.Run(t, func(*testing.T) dataplane.Target {
		return dataplane.Target{Name: "none", Exec: effects.NoDataplane{}, Caps: dataplane.Capabilities{Table: false},
			Again: func(*testing.T) effects.Executor { return effects.NoDataplane{} }}
	})
}
