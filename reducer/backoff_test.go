package reducer

import (
	"math"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestBackoff(t *testing.T) {
	tests := []struct {
		name    string
		attempt int
		jitter  float64
		want    time.Duration
	}{
		{"first-retry-is-100ms", 1, 0.5, 100 * ms},
		{"second-doubles", 2, 0.5, 200 * ms},
		{"third-doubles-again", 3, 0.5, 400 * ms},
		{"ninth-is-25.6s", 9, 0.5, 25600 * ms},
		{"tenth-is-51.2s", 10, 0.5, 51200 * ms},
		{"twelfth-is-204.8s", 12, 0.5, 204800 * ms},
		{"thirteenth-stops-at-250s", 13, 0.5, 250 * time.Second},
		{"later-stay-at-250s", 14, 0.5, 250 * time.Second},
		{"huge-attempt-does-not-overflow", math.MaxInt, 0.5, 250 * time.Second},
		{"zero-attempt-counts-as-first", 0, 0.5, 100 * ms},
		{"negative-attempt-counts-as-first", -3, 0.5, 100 * ms},
		{"lowest-jitter-is-minus-20-percent", 1, 0, 80 * ms},
		{"lowest-jitter-at-cap-is-200s", 20, 0, 200 * time.Second},
		{"negative-jitter-is-clamped", 1, -1, 80 * ms},
		{"nan-jitter-is-clamped", 1, math.NaN(), 80 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Backoff(tt.attempt, tt.jitter); got != tt.want {
				t.Errorf("Backoff(%d, %v) = %v, want %v", tt.attempt, tt.jitter, got, tt.want)
			}
		})
	}
}

// TestBackoffGrowthAndCap: with the same jitter, each delay doubles the
// previous one until the cap, never shrinks, and never exceeds RetryCap.
func TestBackoffGrowthAndCap(t *testing.T) {
	for _, j := range []float64{0, 0.25, 0.5, 0.75, 0.999999} {
		prev := Backoff(1, j)
		for attempt := 2; attempt <= 64; attempt++ {
			d := Backoff(attempt, j)
			switch {
			case d > RetryCap:
				t.Fatalf("Backoff(%d, %v) = %v, over RetryCap", attempt, j, d)
			case d < prev:
				t.Fatalf("Backoff(%d, %v) = %v, shorter than attempt %d's %v", attempt, j, d, attempt-1, prev)
			case attempt <= 12 && absDiff(d, 2*prev) > time.Microsecond:
				t.Fatalf("Backoff(%d, %v) = %v, want double of %v", attempt, j, d, prev)
			}
			prev = d
		}
		if want := time.Duration(float64(nominalCap) * (1 + RetrySpread*(2*j-1))); absDiff(prev, want) > time.Microsecond {
			t.Errorf("capped Backoff(64, %v) = %v, want %v", j, prev, want)
		}
	}
}

// TestBackoffJitterBounds: every delay lies within ±20% of the nominal
// one (jitter 0.5), and no jitter value, however bad, escapes that.
func TestBackoffJitterBounds(t *testing.T) {
	jitters := []float64{-1, math.NaN(), math.Inf(1), 1, 2, 0.999999999}
	for j := 0.0; j < 1; j += 0.01 {
		jitters = append(jitters, j)
	}
	for attempt := 1; attempt <= 30; attempt++ {
		nom := float64(Backoff(attempt, 0.5))
		lo, hi := time.Duration(nom*(1-RetrySpread)), time.Duration(nom*(1+RetrySpread))
		for _, j := range jitters {
			d := Backoff(attempt, j)
			if d < lo || d > hi || d > RetryCap {
				t.Fatalf("Backoff(%d, %v) = %v, outside [%v, %v]", attempt, j, d, lo, hi)
			}
		}
		if top := Backoff(attempt, 0.999999999); hi-top > hi/1000 {
			t.Errorf("Backoff(%d, ~1) = %v, want close to %v: jitter does not reach +20%%", attempt, top, hi)
		}
	}
}

func absDiff(a, b time.Duration) time.Duration {
	if a > b {
		return a - b
	}
	return b - a
}

// TestJitter: the jitter is in [0, 1), the same for the same retry, and
// differs between records and attempts.
func TestJitter(t *testing.T) {
	seen := map[float64]bool{}
	for _, key := range []string{"10.0.0.1", "10.0.0.2", "fd00::1"} {
		for attempt := 1; attempt <= 20; attempt++ {
			j := Jitter("peer", key, attempt)
			if j < 0 || j >= 1 || math.IsNaN(j) {
				t.Fatalf("Jitter(peer, %s, %d) = %v", key, attempt, j)
			}
			if j != Jitter("peer", key, attempt) {
				t.Fatalf("Jitter(peer, %s, %d) is not stable", key, attempt)
			}
			seen[j] = true
		}
	}
	if len(seen) != 60 || Jitter("peer", "x", 1) == Jitter("route", "x", 1) {
		t.Errorf("%d distinct jitters of 60, or kinds share one", len(seen))
	}
}
