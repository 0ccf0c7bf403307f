package reducer

import (
	"time"

	"github.com/peeragent/peeragent/state"
)

// Retries (docs/design.md "Time"): a failed call's record (a session, a
// route table entry, an own path call, the server) keeps when its retry
// comes due, RetryAt, from the failure's time and the backoff of its
// attempts; State.Index.Retries orders them by time. A Tick fires those
// due: the record's Retry is bumped and Diff makes the call again.

// retryAt records the retry of attempt of record key of kind, which
// failed at failed (or, when the result carries no time, at the reducer's
// clock), and returns when it comes due: the backoff, to the millisecond,
// after the failure.
func (t *tx) retryAt(kind, key string, attempt int, failed time.Time) time.Time {
	if failed.IsZero() {
		failed = t.s.Now
	}
	at := failed.Add(Backoff(attempt, Jitter(kind, key, attempt)).Round(time.Millisecond))
	d := state.Due{At: at, Kind: kind, Key: key}
	t.s.Index.Retries = t.s.Index.Retries.Set(state.DueKey(d), d)
	return at
}

// fireRetries fires every retry due at the reducer's clock, earliest
// first; a stale entry is dropped.
func (t *tx) fireRetries() {
	for {
		d, ok := t.s.FirstRetry()
		if !ok || d.At.After(t.s.Now) {
			return
		}
		t.s.Index.Retries = t.s.Index.Retries.Delete(state.DueKey(d))
		if t.pendingRetry(d) {
			t.s.Retries++
			t.fireRetry(d)
		}
	}
}

// dropStaleRetries drops the stale entries that come first, so that the
// first entry, and so State.Deadline, is a pending retry. Called at the end
// of every step.
func (t *tx) dropStaleRetries() {
	for {
		d, ok := t.s.FirstRetry()
		if !ok || t.pendingRetry(d) {
			return
		}
		t.s.Index.Retries = t.s.Index.Retries.Delete(state.DueKey(d))
	}
}

// pendingRetry: d's record has failed and waits for exactly this retry.
func (t *tx) pendingRetry(d state.Due) bool {
	switch d.Kind {
	case state.RetryPeer:
		x, ok := t.s.Out.Sessions.Get(d.Key)
		return ok && x.Phase == pFail && x.RetryAt.Equal(d.At)
	case state.RetryRoute:
		e, ok := t.s.Out.Routes.Get(d.Key)
		return ok && e.Phase == state.RoutePhaseFailed && e.RetryAt.Equal(d.At)
	case state.RetryPath:
		c, ok := t.s.Out.PathCalls.Get(d.Key)
		return ok && c.Phase == state.RoutePhaseFailed && c.RetryAt.Equal(d.At)
	case state.RetryServer:
		_, failed := t.s.Out.Problems.Get("server")
		return failed && t.s.ServerRetryAt.Equal(d.At)
	}
	return false
}

// fireRetry bumps the record's Retry: Diff makes the call again (the
// whole server, for the server).
func (t *tx) fireRetry(d state.Due) {
	switch d.Kind {
	case state.RetryPeer:
		x, _ := t.s.Out.Sessions.Get(d.Key)
		c := *x
		c.Retry++
		c.RetryAt = time.Time{}
		t.putSession(d.Key, &c)
	case state.RetryRoute:
		t.routeRetry(d.Key)
	case state.RetryPath:
		t.pathRetry(d.Key)
	case state.RetryServer:
		t.s.ServerRetry++
		t.s.ServerRetryAt = time.Time{}
		t.newSpeaker()
	}
}
