// Package retry turns failed effects into RetryDue actions after a
// per-neighbor (and per route table prefix) exponential backoff.
//
// Contract:
//   - Backoff is pure: 100 ms for the first retry, doubling, each delay
//     moved by up to ±20% by the jitter value the caller draws, so
//     neighbors that failed together do not retry in lockstep. The nominal
//     delay stops at 50 s, so with jitter the delays there spread over
//     [40 s, 60 s): never more than one minute, never all equal.
//   - Scheduler.Observe sees every action the agent dispatches and acts on
//     the results only. A PeerApplyFailed schedules one
//     RetryDue{Address, Gen} for that address; a failure for a newer
//     generation replaces the pending timer, and a result for an older
//     generation than one already seen is ignored, so a late result can
//     never cancel or overwrite the retry of a newer generation.
//   - A TableRouteApplyFailed schedules RetryDue{Prefix, Gen} for the route
//     table entry (docs/routes.md §9.7 rule 3) under the same rules, keyed by
//     the prefix, apart from every neighbor; a TableRouteApplied of that
//     generation or a newer one cancels it.
//   - Attempts count retry rounds per address: the failures of one
//     generation reported before its timer fires share one round.
//   - A PeerApplied clears the address's failure: the timer is cancelled
//     and the attempt count reset.
//   - Stop cancels every timer and makes Observe a no-op; no goroutine of
//     the Scheduler remains. A timer callback already past its check may
//     still deliver its one RetryDue: Stop does not wait for it, because
//     dispatch may be blocked on the very loop that is calling Stop.
//   - dispatch is called from timer goroutines with no lock held, so it
//     may call Observe.
//   - Time and randomness come from hooks (Clock, a float source), so tests
//     are exact and need no sleeps.
package retry
