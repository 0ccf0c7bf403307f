package main

import (
	"math"
	"strings"
	"testing"
)

// TestLimitsTextFollowsTheRatio: the churn paragraph blames GoBGP only
// when the agent, flooded, comes near the floor's rate.
func TestLimitsTextFollowsTheRatio(t *testing.T) {
	figures := func(maxFloor float64) getter {
		return func(name, unit string) float64 {
			if name != churnGoBGP {
				return math.NaN()
			}
			switch unit {
			case "floor-events/s":
				return 209
			case "old-events/s":
				return 7
			case "max/floor":
				return maxFloor
			}
			return math.NaN()
		}
	}
	near := limitsText(figures(0.95))
	if !strings.Contains(near, "bounded by GoBGP's cost per change") || strings.Contains(near, "does not show") {
		t.Errorf("agent at 0.95x the floor:\n%s", near)
	}
	far := limitsText(figures(0.12))
	if strings.Contains(far, "bounded by GoBGP's cost per change, not by the agent") || !strings.Contains(far, "reached only 0.12x") {
		t.Errorf("agent at 0.12x the floor:\n%s", far)
	}
}
