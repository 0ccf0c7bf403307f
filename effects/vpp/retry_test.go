package vpp

import (
	"context"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/effects/retry"
	"github.com/peeragent/peeragent/state"
)

// TestVPPErrorIsRetried closes the retry loop for routes: a retval from
// VPP becomes TableRouteApplyFailed, which the retry Scheduler turns into
// a RetryDue for the same prefix and generation.
func TestVPPErrorIsRetried(t *testing.T) {
	vpp := newFakeVPP(t, noSuchFIB)
	due := make(chan state.Action, 1)
	sched := retry.New(func(a state.Action) { due <- a }, nil, nil)
	defer sched.Stop()

	e := New(vpp.conn, nil)
	e.source.Store(ourSource)
	results := e.Execute(context.Background(), []effects.Effect{replace(host(nbr4), gw4, 7)})
	for _, a := range results {
		sched.Observe(a)
	}
	select {
	case a := <-due:
		if rd, ok := a.(state.RetryDue); !ok || rd.Prefix != host(nbr4) || rd.Gen != 7 {
			t.Errorf("dispatched %#v, want RetryDue{10.0.0.9/32, 7}", a)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no RetryDue within 5s after %v", results)
	}
}
