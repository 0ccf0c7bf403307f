package agent

import (
	"net/netip"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// TestMetricsCountPathResults: add-path and delete-path results are
// counted by kind and result, matched by prefix and generation
// (docs/routes.md §10).
func TestMetricsCountPathResults(t *testing.T) {
	m := NewMetrics()
	a, b := netip.MustParsePrefix("10.244.1.0/26"), netip.MustParsePrefix("10.244.2.0/26")
	m.executed([]effects.Effect{
		effects.AddPath{Path: &state.Path{Prefix: a}, Gen: 3},
		effects.DeletePath{Prefix: b, Gen: 4},
	}, []state.Action{
		state.PathApplyFailed{Prefix: a, Gen: 3, Error: "boom"},
		state.PathApplied{Prefix: b, Gen: 4},
	})
	for _, c := range []struct {
		kind, result string
		want         float64
	}{{"add-path", "issued", 1}, {"add-path", "failed", 1}, {"add-path", "applied", 0},
		{"delete-path", "issued", 1}, {"delete-path", "applied", 1}} {
		if got := testutil.ToFloat64(m.effects.WithLabelValues(c.kind, c.result)); got != c.want {
			t.Errorf("%s %s = %v, want %v", c.kind, c.result, got, c.want)
		}
	}
}
