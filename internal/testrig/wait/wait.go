// Package wait polls a condition in tests (a loop became ready, a fake saw
// a request) every 5 ms until it holds, failing the test when a deadline
// passes first. For what a test cannot be told about; a channel is better
// where there is one.
package wait

import (
	"testing"
	"time"
)

// every is how often Until asks.
const every = 5 * time.Millisecond

// Until returns once cond holds; t fails ("timed out after TIMEOUT waiting
// for WHAT") when it still does not after timeout.
func Until(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if !time.Now().Before(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(every)
	}
}
