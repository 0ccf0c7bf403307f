package retry

import (
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/peeragent/peeragent/state"
)

var (
	addrA = netip.MustParseAddr("10.0.0.9")
	addrB = netip.MustParseAddr("fd00::9")
)

func peerFailed(a netip.Addr, gen uint64) state.Action {
	return state.PeerApplyFailed{Address: a, Gen: gen, Error: "boom"}
}
func peerOK(a netip.Addr, gen uint64) state.Action { return state.PeerApplied{Address: a, Gen: gen} }

// due is the RetryDue expected when the fake clock stands at t0+at.
func due(a netip.Addr, gen uint64, at time.Duration) state.Action {
	return state.RetryDue{Address: a, Gen: gen, At: t0.Add(at)}
}

var (
	pfxA = netip.MustParsePrefix("10.65.0.0/26")
	pfxB = netip.MustParsePrefix("fd00:65::/122")
)

func tableFailed(p netip.Prefix, gen uint64) state.Action {
	return state.TableRouteApplyFailed{Prefix: p, Gen: gen, Error: "boom"}
}

// tableDue is the RetryDue of a route table entry (docs/routes.md §9.7 rule 3).
func tableDue(p netip.Prefix, gen uint64, at time.Duration) state.Action {
	return state.RetryDue{Prefix: p, Gen: gen, At: t0.Add(at)}
}

// step observes actions (or stops the Scheduler), then advances the
// clock and expects exactly want to be dispatched meanwhile.
type step struct {
	observe []state.Action
	stop    bool
	advance time.Duration
	want    []state.Action
}

func TestScheduler(t *testing.T) {
	tests := []struct {
		name   string
		lowest bool // jitter 0 (-20%) instead of 0.5, the nominal delays
		steps  []step
	}{{
		name: "peer-failure-retries-after-100ms",
		steps: []step{
			{observe: []state.Action{peerFailed(addrA, 5)}, advance: 99 * ms},
			{advance: ms, want: []state.Action{due(addrA, 5, 100*ms)}},
		},
	}, {
		name:   "jitter-source-is-used",
		lowest: true,
		steps: []step{
			{observe: []state.Action{peerFailed(addrA, 5)}, advance: 79 * ms},
			{advance: ms, want: []state.Action{due(addrA, 5, 80*ms)}},
		},
	}, {
		name: "backoff-doubles-per-round",
		steps: []step{
			{observe: []state.Action{peerFailed(addrA, 5)}, advance: 100 * ms, want: []state.Action{due(addrA, 5, 100*ms)}},
			{observe: []state.Action{peerFailed(addrA, 5)}, advance: 199 * ms},
			{advance: ms, want: []state.Action{due(addrA, 5, 300*ms)}},
			{observe: []state.Action{peerFailed(addrA, 5)}, advance: 400 * ms, want: []state.Action{due(addrA, 5, 700*ms)}},
		},
	}, {
		name: "failures-of-one-round-count-once",
		steps: []step{
			{observe: []state.Action{peerFailed(addrA, 5), peerFailed(addrA, 5)}, advance: 100 * ms,
				want: []state.Action{due(addrA, 5, 100*ms)}},
			{observe: []state.Action{peerFailed(addrA, 5), peerFailed(addrA, 5)}, advance: time.Second,
				want: []state.Action{due(addrA, 5, 300*ms)}},
		},
	}, {
		name: "newer-generation-replaces-pending-timer",
		steps: []step{
			{observe: []state.Action{peerFailed(addrA, 5)}, advance: 50 * ms},
			{observe: []state.Action{peerFailed(addrA, 6)}, advance: 199 * ms},
			{advance: ms, want: []state.Action{due(addrA, 6, 250*ms)}},
			{advance: time.Minute},
		},
	}, {
		name: "older-generation-results-are-ignored",
		steps: []step{
			{observe: []state.Action{peerFailed(addrA, 6), peerFailed(addrA, 5), peerOK(addrA, 5)},
				advance: time.Minute, want: []state.Action{due(addrA, 6, 100*ms)}},
		},
	}, {
		name: "success-cancels-and-resets-attempts",
		steps: []step{
			{observe: []state.Action{peerFailed(addrA, 5)}, advance: 100 * ms, want: []state.Action{due(addrA, 5, 100*ms)}},
			{observe: []state.Action{peerFailed(addrA, 5), peerOK(addrA, 5)}, advance: time.Minute},
			{observe: []state.Action{peerFailed(addrA, 7)}, advance: 100 * ms,
				want: []state.Action{due(addrA, 7, time.Minute+200*ms)}},
		},
	}, {
		name: "newer-generation-success-cancels-older-retry",
		steps: []step{
			{observe: []state.Action{peerFailed(addrA, 5), peerOK(addrA, 6)}, advance: time.Minute},
		},
	}, {
		name: "addresses-back-off-independently",
		steps: []step{
			{observe: []state.Action{peerFailed(addrA, 5)}, advance: 100 * ms, want: []state.Action{due(addrA, 5, 100*ms)}},
			{observe: []state.Action{peerFailed(addrA, 5), peerFailed(addrB, 9)}, advance: 100 * ms,
				want: []state.Action{due(addrB, 9, 200*ms)}},
			{advance: 100 * ms, want: []state.Action{due(addrA, 5, 300*ms)}},
		},
	}, {
		name: "ipv4-mapped-address-is-the-same-neighbor",
		steps: []step{
			{observe: []state.Action{peerFailed(netip.MustParseAddr("::ffff:10.0.0.9"), 5), peerOK(addrA, 5)},
				advance: time.Minute},
		},
	}, {
		name: "other-actions-are-ignored",
		steps: []step{
			{observe: []state.Action{
				state.RetryDue{Address: addrA, Gen: 5},
				state.SessionStateChanged{Address: addrA, State: "idle"},
				state.PeerDeleted{Name: "p"},
			}, advance: time.Minute},
		},
	}, {
		name: "server-failure-is-retried-until-it-starts",
		steps: []step{
			{observe: []state.Action{state.ServerApplyFailed{Error: "port taken"}}, advance: 100 * ms,
				want: []state.Action{due(netip.Addr{}, 0, 100*ms)}},
			{observe: []state.Action{state.ServerApplyFailed{Error: "port taken"}, state.ServerApplied{}}, advance: time.Minute},
		},
	}, {
		name: "table-route-failure-retries-per-prefix-with-backoff",
		steps: []step{
			{observe: []state.Action{tableFailed(pfxA, 3), tableFailed(pfxB, 4)}, advance: 100 * ms,
				want: []state.Action{tableDue(pfxA, 3, 100*ms), tableDue(pfxB, 4, 100*ms)}},
			{observe: []state.Action{tableFailed(pfxA, 3)}, advance: 200 * ms, want: []state.Action{tableDue(pfxA, 3, 300*ms)}},
			{observe: []state.Action{tableFailed(pfxA, 3), state.TableRouteApplied{Prefix: pfxA, Gen: 3}}, advance: time.Minute},
		},
	}, {
		name: "table-route-is-not-a-neighbor",
		steps: []step{
			{observe: []state.Action{tableFailed(pfxA, 5), peerOK(addrA, 5), state.ServerApplied{}},
				advance: 100 * ms, want: []state.Action{tableDue(pfxA, 5, 100*ms)}},
			{observe: []state.Action{tableFailed(pfxA, 6), state.TableRouteApplied{Prefix: pfxA, Gen: 5}}, advance: 200 * ms,
				want: []state.Action{tableDue(pfxA, 6, 300*ms)}},
		},
	}, {
		name: "stop-cancels-everything",
		steps: []step{
			{observe: []state.Action{peerFailed(addrA, 5), peerFailed(addrB, 6), tableFailed(pfxA, 7)}, advance: 50 * ms},
			{stop: true, advance: time.Minute},
			{observe: []state.Action{peerFailed(addrA, 7)}, advance: time.Minute},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jitter := 0.5
			if tt.lowest {
				jitter = 0
			}
			runSteps(t, jitter, tt.steps)
		})
	}
}

func runSteps(t *testing.T, jitter float64, steps []step) {
	clock, rec := newFakeClock(), &recorder{}
	s := New(rec.dispatch, func() float64 { return jitter }, clock)
	for i, st := range steps {
		for _, a := range st.observe {
			s.Observe(a)
		}
		if st.stop {
			s.Stop()
			if n := clock.live(); n != 0 {
				t.Errorf("step %d: %d timers still live after Stop", i, n)
			}
		}
		clock.Advance(st.advance)
		if diff := cmp.Diff(st.want, rec.take(), cmpopts.EquateEmpty(), cmp.Comparer(addrEqual), cmp.Comparer(prefixEqual)); diff != "" {
			t.Errorf("step %d: dispatched (-want +got):\n%s", i, diff)
		}
	}
}

func addrEqual(a, b netip.Addr) bool     { return a == b }
func prefixEqual(a, b netip.Prefix) bool { return a == b }

// TestSchedulerRealClock: with the default clock and randomness a retry
// arrives within the jittered first delay, stamped with the time.
func TestSchedulerRealClock(t *testing.T) {
	got := make(chan state.Action, 1)
	s := New(func(a state.Action) { got <- a }, nil, nil)
	defer s.Stop()
	start := time.Now()
	s.Observe(peerFailed(addrA, 5))
	select {
	case a := <-got:
		rd, ok := a.(state.RetryDue)
		if !ok || rd.Address != addrA || rd.Gen != 5 || rd.At.Before(start) {
			t.Errorf("dispatched %#v, want RetryDue{10.0.0.9, 5} stamped after %v", a, start)
		}
		if took := time.Since(start); took < 80*ms {
			t.Errorf("retry after %v, before the shortest first delay", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no RetryDue within 5s")
	}
}

// TestStopLeavesNothingBehind: with real timers firing while other
// goroutines observe, Stop ends the dispatches and leaves no goroutine.
// Meant for -race.
func TestStopLeavesNothingBehind(t *testing.T) {
	baseline := runtime.NumGoroutine()
	var mu sync.Mutex
	stopped, fired, late := false, 0, 0
	s := New(func(state.Action) {
		mu.Lock()
		defer mu.Unlock()
		fired++
		if stopped {
			late++
		}
	}, nil, nil)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			observeFor(s, w, 250*ms)
		}()
	}
	wg.Wait()
	s.Stop()
	// A dispatch already past its check when Stop ran may still finish
	// (see doc.go); give it a moment, then no other may start.
	time.Sleep(20 * ms)
	mu.Lock()
	stopped = true
	mu.Unlock()
	time.Sleep(300 * ms) // longer than any first delay (120 ms)
	mu.Lock()
	defer mu.Unlock()
	if fired == 0 {
		t.Error("no timer fired while observing: the test exercised nothing concurrent")
	}
	if late != 0 {
		t.Errorf("%d RetryDue dispatched after Stop returned", late)
	}
	waitForGoroutines(t, baseline)
}

// observeFor feeds failures and successes until d passes, revisiting each
// address only every 150 iterations so that some timers get to fire.
func observeFor(s *Scheduler, worker int, d time.Duration) {
	end := time.Now().Add(d)
	for gen := uint64(1); time.Now().Before(end); gen++ {
		a := netip.AddrFrom4([4]byte{10, 0, byte(worker), byte(gen % 150)})
		s.Observe(peerFailed(a, gen))
		if gen%3 == 0 {
			s.Observe(peerOK(a, gen))
		}
		time.Sleep(ms)
	}
}

func waitForGoroutines(t *testing.T, baseline int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Stop, %d before the Scheduler", runtime.NumGoroutine(), baseline)
		}
		time.Sleep(10 * ms)
	}
}
