package agent

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// fakeTimers records the alarm's timers; fire runs one by hand.
type fakeTimers struct {
	mu     sync.Mutex
	timers []*fakeTimer
}

type fakeTimer struct {
	d       time.Duration
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool { was := !t.stopped; t.stopped = true; return was }

func (ft *fakeTimers) afterFunc(d time.Duration, f func()) stopper {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	t := &fakeTimer{d: d, f: f}
	ft.timers = append(ft.timers, t)
	return t
}

func (ft *fakeTimers) last() *fakeTimer {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return ft.timers[len(ft.timers)-1]
}

func TestAlarm(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	var got []state.Action
	newTest := func() (*alarm, *fakeTimers) {
		got = nil
		ft := &fakeTimers{}
		a := newAlarm(func(x state.Action) { got = append(got, x) }, func() time.Time { return now })
		a.afterFunc = ft.afterFunc
		return a, ft
	}
	t.Run("rings-once-with-the-time", func(t *testing.T) {
		a, ft := newTest()
		a.set(t0.Add(time.Second))
		if d := ft.last().d; d != time.Second {
			t.Fatalf("timer set for %v, want 1s", d)
		}
		now = t0.Add(time.Second + time.Millisecond)
		ft.last().f()
		ft.last().f() // a second call of the same timer does nothing
		if len(got) != 1 || got[0] != state.Action(state.Tick{At: now}) {
			t.Errorf("dispatched %v, want one Tick at %v", got, now)
		}
		now = t0
	})
	t.Run("a-replaced-alarm-does-not-ring", func(t *testing.T) {
		a, ft := newTest()
		a.set(t0.Add(time.Second))
		first := ft.last()
		a.set(t0.Add(2 * time.Second))
		if !first.stopped {
			t.Error("the first timer was not stopped")
		}
		first.f() // it was already running when stopped
		if len(got) != 0 {
			t.Errorf("dispatched %v for a replaced alarm", got)
		}
		ft.last().f()
		if len(got) != 1 || got[0] != state.Action(state.Tick{At: t0.Add(2 * time.Second)}) {
			t.Errorf("dispatched %v, want a Tick at the deadline (the clock is behind it)", got)
		}
	})
	t.Run("off-and-stop", func(t *testing.T) {
		a, ft := newTest()
		a.set(t0.Add(time.Second))
		a.set(time.Time{})
		if !ft.last().stopped || len(ft.timers) != 1 {
			t.Error("alarm off left a timer running")
		}
		a.set(t0.Add(time.Second))
		a.stop()
		ft.last().f()
		a.set(t0.Add(time.Second))
		if len(got) != 0 || len(ft.timers) != 2 {
			t.Errorf("a stopped alarm dispatched %v or set %d timers", got, len(ft.timers))
		}
	})
	t.Run("a-past-deadline-rings-at-once", func(t *testing.T) {
		a, ft := newTest()
		a.set(t0.Add(-time.Minute))
		if d := ft.last().d; d != 0 {
			t.Errorf("timer set for %v, want 0", d)
		}
	})
}

func TestTakeAlarm(t *testing.T) {
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	effs := []effects.Effect{effects.WatchServices{}, effects.Alarm{At: at}}
	rest, got, ok := takeAlarm(effs)
	if !ok || !got.Equal(at) || len(rest) != 1 {
		t.Errorf("takeAlarm = %v, %v, %v", rest, got, ok)
	}
	if rest, _, ok := takeAlarm(rest); ok || len(rest) != 1 {
		t.Errorf("takeAlarm without an alarm = %v, %v", rest, ok)
	}
}

// startingSpeaker is fakeSpeaker that also starts the server, at the time
// of the call.
type startingSpeaker struct{ fakeSpeaker }

func (s *startingSpeaker) Execute(ctx context.Context, effs []effects.Effect) []state.Action {
	out := s.fakeSpeaker.Execute(ctx, effs)
	for _, e := range effs {
		if x, ok := e.(effects.StartServer); ok {
			out = append(out, state.ServerApplied{Server: x.Server, At: time.Now()})
		}
	}
	return out
}

// TestAlarmSettlesTheRoutes: the settle deadline the reducer keeps sets
// the loop's alarm, whose Tick settles the routes at the settle maximum
// and sweeps the held route; no other clock is running.
func TestAlarmSettlesTheRoutes(t *testing.T) {
	opts := state.Options{RouteSettleMax: state.Duration{Duration: 300 * time.Millisecond}}
	l := runLoop(t, LoopConfig{Initial: state.New("node-a", opts), Speaker: &startingSpeaker{},
		Secrets: &fakeSecrets{watched: map[string]bool{}}, Journal: 100, Log: discardLogger()})
	held := netip.MustParsePrefix("10.244.9.0/26")
	l.Dispatch(state.RoutesListed{Dataplane: "none", Routes: []state.Route{{Prefix: held, Drop: true}}})
	for _, a := range labActions() {
		l.Dispatch(a)
	}
	waitFor(t, "the settle deadline", func() bool { return !l.State().Routing.SettleAt.IsZero() })
	start := l.State().Routing.Since
	waitFor(t, "the routes settled", func() bool { return l.State().Routing.Settled })
	s := l.State()
	if s.Now.Before(start.Add(300 * time.Millisecond)) {
		t.Errorf("settled at %v, before the settle maximum after %v", s.Now, start)
	}
	if e, ok := s.Out.Routes.Get(state.PrefixKey(held)); !ok || e.Held != nil || e.Phase != state.RoutePhasePending {
		t.Errorf("held route after settling: %+v, want its removal pending", e)
	}
	if !s.Deadline().IsZero() {
		t.Errorf("deadline %v left after settling", s.Deadline())
	}
}
