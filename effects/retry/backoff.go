package retry

import (
	"math"
	"time"
)

const (
	// First is the nominal delay before the first retry.
	First = 100 * time.Millisecond
	// Max caps every delay, jitter included.
	Max = time.Minute
	// Spread is the jitter's reach either side of the nominal delay.
	Spread = 0.2

	// nominalCap is Max/(1+Spread): the nominal delay stops doubling at
	// 50 s, so that at the cap the delays still spread over [40 s, 60 s)
	// instead of all being clipped to exactly one minute.
	nominalCap = Max * 5 / 6
)

// Backoff is the delay before retry number attempt (1 for the first):
// 100 ms doubled per attempt up to 50 s, times a factor in [0.8, 1.2)
// chosen by jitter in [0, 1), so never more than Max. attempt below 1
// counts as 1; jitter outside [0, 1) or NaN is clamped, so a bad source
// cannot give a bad delay.
func Backoff(attempt int, jitter float64) time.Duration {
	factor := 1 + Spread*(2*clamp(jitter)-1)
	return min(time.Duration(float64(nominal(attempt))*factor), Max)
}

// nominal doubles First per attempt until nominalCap; the loop stops
// there, so a huge attempt number costs nothing and cannot overflow.
func nominal(attempt int) time.Duration {
	d := First
	for i := 1; i < attempt && d < nominalCap; i++ {
		d *= 2
	}
	return min(d, nominalCap)
}

func clamp(j float64) float64 {
	switch {
	case math.IsNaN(j) || j < 0:
		return 0
	case j >= 1:
		return math.Nextafter(1, 0)
	}
	return j
}
