package retry

import (
	"sync"
	"time"

	"github.com/peeragent/peeragent/state"
)

// fakeClock runs timers only when Advance is called, in deadline order,
// in the caller's goroutine: the tests are exact and never sleep.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c             *fakeClock
	at            time.Time
	f             func()
	stopped, done bool
}

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func newFakeClock() *fakeClock { return &fakeClock{now: t0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.stopped || t.done {
		return false
	}
	t.stopped = true
	return true
}

// Advance moves time forward by d, running each timer that falls due.
func (c *fakeClock) Advance(d time.Duration) {
	end := c.Now().Add(d)
	for {
		t := c.next(end)
		if t == nil {
			return
		}
		t.f()
	}
}

// next marks the earliest live timer due by end as done and moves the
// clock to it; with none, it moves the clock to end.
func (c *fakeClock) next(end time.Time) *fakeTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first *fakeTimer
	for _, t := range c.timers {
		if !t.stopped && !t.done && !t.at.After(end) && (first == nil || t.at.Before(first.at)) {
			first = t
		}
	}
	if first == nil {
		c.now = end
		return nil
	}
	first.done, c.now = true, first.at
	return first
}

// live counts timers neither fired nor stopped.
func (c *fakeClock) live() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped && !t.done {
			n++
		}
	}
	return n
}

// recorder is a dispatch func that keeps what it is given.
type recorder struct {
	mu  sync.Mutex
	got []state.Action
}

func (r *recorder) dispatch(a state.Action) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, a)
}

// take returns what was dispatched since the last take.
func (r *recorder) take() []state.Action {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}
