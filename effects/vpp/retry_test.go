package vpp

import (
	"context"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// TestVPPErrorIsRetried: a retval from VPP becomes TableRouteApplyFailed
// for the same prefix and generation, stamped with the time of the call:
// the reducer's retry of the route starts its backoff there
// (docs/design.md "Time").
func TestVPPErrorIsRetried(t *testing.T) {
	vpp := newFakeVPP(t, noSuchFIB)
	e := newExecutor(vpp.conn, nil)
	e.source.Store(ourSource)
	before := time.Now()
	results := e.Execute(context.Background(), []effects.Effect{replace(host(nbr4), gw4, 7)})
	after := time.Now()
	if len(results) != 1 {
		t.Fatalf("results %v, want one", results)
	}
	f, ok := results[0].(state.TableRouteApplyFailed)
	if !ok || f.Prefix != host(nbr4) || f.Gen != 7 || f.At.Before(before) || f.At.After(after) {
		t.Errorf("result %#v, want TableRouteApplyFailed{10.0.0.9/32, 7} stamped between %v and %v", results[0], before, after)
	}
}
