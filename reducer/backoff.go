package reducer

import (
	"hash/fnv"
	"math"
	"strconv"
	"time"
)

// The retry backoff of every failed call (docs/semantics.md §6,
// docs/routes.md §9.7 rule 3, §10): RetryFirst, doubled per failure, moved
// by up to ±RetrySpread by a jitter, never more than RetryCap.
const (
	// RetryFirst is the nominal delay before the first retry.
	RetryFirst = 100 * time.Millisecond
	// RetryCap caps every delay, jitter included: a call that keeps
	// failing is retried every 200 to 300 s, for ever (the kubelet's
	// CrashLoopBackOff cap): a broken route or a taken port costs a few
	// calls and log lines an hour, not one a minute.
	RetryCap = 5 * time.Minute
	// RetrySpread is the jitter's reach either side of the nominal delay.
	RetrySpread = 0.2

	// nominalCap is RetryCap/(1+RetrySpread): the nominal delay stops
	// doubling there, so that at the cap the delays still spread over
	// [RetryCap*2/3, RetryCap) instead of all being clipped to RetryCap.
	nominalCap = RetryCap * 5 / 6
)

// Backoff is the delay before retry number attempt (1 for the first):
// RetryFirst doubled per attempt up to RetryCap*5/6, times a factor in
// [0.8, 1.2) chosen by jitter in [0, 1), so never more than RetryCap.
// attempt below 1 counts as 1; jitter outside [0, 1) or NaN is clamped,
// so a bad source cannot give a bad delay.
func Backoff(attempt int, jitter float64) time.Duration {
	factor := 1 + RetrySpread*(2*clamp(jitter)-1)
	return min(time.Duration(float64(nominal(attempt))*factor), RetryCap)
}

// nominal doubles RetryFirst per attempt until nominalCap; the loop stops
// there, so a huge attempt number costs nothing and cannot overflow.
func nominal(attempt int) time.Duration {
	d := RetryFirst
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

// Jitter is the jitter of retry number attempt of the record key of kind:
// a hash of the three, in [0, 1). Records that failed together do not
// retry in lockstep, and the same history gives the same schedule (the
// goldens pin it).
func Jitter(kind, key string, attempt int) float64 {
	h := fnv.New64a()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(attempt)))
	return float64(h.Sum64()>>11) / (1 << 53)
}
