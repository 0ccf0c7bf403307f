package agent

import (
	"context"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// SecretWatcher starts and stops the per-name Secret watches that the
// WatchSecret and UnwatchSecret effects ask for.
type SecretWatcher interface {
	Watch(name string)
	Unwatch(name string)
}

// ServiceWatcher starts and stops the Service and EndpointSlice watches
// that the WatchServices and UnwatchServices effects ask for
// (docs/routes.md §8.4).
type ServiceWatcher interface {
	WatchServices()
	UnwatchServices()
}

// Loop owns the State. One goroutine (Run) is the only caller of Reduce;
// effects run on another, in order, and come back as actions.
type Loop struct {
	box       *mailbox
	cur       atomic.Pointer[state.State]
	journal   *Journal
	metrics   *Metrics
	log       *slog.Logger
	speaker   effects.Executor
	dataplane effects.Executor // linux, vpp or none: whatever carries out the dataplane effects
	secrets   SecretWatcher
	svcs      ServiceWatcher
	publish   []func(state.State)
	alarm     *alarm // the executor of effects.Alarm

	work     chan []effects.Effect
	ready    atomic.Bool // every source synced and the first effects applied
	now      func() time.Time
	pendingQ atomic.Int64
	// inspector is the speaker's own view of its neighbors, when the
	// speaker executor offers one (metrics, /neighbors/ADDRESS).
	inspector effects.Inspector
	stuck     time.Duration
	running   atomic.Int64 // UnixNano when the effects batch running began; 0: none
	stepping  atomic.Int64 // UnixNano when the step running began; 0: none
}

// LoopConfig wires a Loop.
type LoopConfig struct {
	Initial   state.State
	Speaker   effects.Executor
	Dataplane effects.Executor // the dataplane executor (effects/linux, effects/vpp, or effects.NoDataplane: none)
	Secrets   SecretWatcher
	Services  ServiceWatcher // nil: no source of services (the effects are dropped)
	Log       *slog.Logger
	Metrics   *Metrics
	Journal   int
	// Published are called on the loop's goroutine with each State it
	// publishes (and the initial one, by NewLoop): for process settings
	// derived from State that need no result, such as the log level
	// (cmd/peeragent). They must be quick and must not dispatch.
	Published []func(state.State)
	// NeighborSeries caps the neighbors with metric series of their own
	// (DefaultNeighborSeries if zero; negative: none).
	NeighborSeries int
	// StuckAfter is how long an action may wait for the loop, or an effects
	// batch may run, before Health calls the loop stuck (1 min if zero).
	StuckAfter time.Duration
}

// NewLoop makes a loop starting from cfg.Initial.
func NewLoop(cfg LoopConfig) *Loop {
	l := &Loop{box: newMailbox(), journal: NewJournal(cfg.Journal), metrics: cfg.Metrics,
		log: cfg.Log, speaker: cfg.Speaker, dataplane: cfg.Dataplane, secrets: cfg.Secrets, svcs: cfg.Services,
		publish: cfg.Published, work: make(chan []effects.Effect, 1024), now: time.Now,
		stuck: cfg.StuckAfter}
	if l.stuck <= 0 {
		l.stuck = time.Minute
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	if l.metrics == nil {
		l.metrics = NewMetrics()
	}
	s := cfg.Initial
	l.cur.Store(&s)
	for _, p := range l.publish {
		p(s)
	}
	l.metrics.stateChanged(state.State{}, s)
	series := cfg.NeighborSeries
	if series == 0 {
		series = DefaultNeighborSeries
	}
	l.metrics.Watch(l.State, max(series, 0))
	l.inspector, _ = cfg.Speaker.(effects.Inspector)
	l.alarm = newAlarm(l.Dispatch, time.Now)
	return l
}

// Dispatch hands an action to the loop; it never blocks.
func (l *Loop) Dispatch(a state.Action) { l.box.Dispatch(a) }

// State is the last published State (safe from any goroutine).
func (l *Loop) State() state.State { return *l.cur.Load() }

// Ready reports whether every source has synced and the first effects ran.
func (l *Loop) Ready() bool { return l.ready.Load() }

// Journal is the loop's action journal.
func (l *Loop) Journal() *Journal { return l.journal }

// Metrics is the loop's metrics (its registry is what /metrics serves).
func (l *Loop) Metrics() *Metrics { return l.metrics }

// Pending is the number of effect batches handed to the effects runner and
// not yet finished: tests wait for 0 instead of sleeping.
func (l *Loop) Pending() int64 { return l.pendingQ.Load() }

// Run reduces actions until ctx ends. Whatever is queued when it wakes is
// reduced as one batch and diffed once. The alarm rings while it runs.
func (l *Loop) Run(ctx context.Context) {
	done := make(chan struct{})
	go l.runEffects(ctx, done)
	defer func() { close(l.work); <-done }()
	defer l.alarm.stop()
	l.alarm.set(l.State().Deadline())
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.box.signal:
		}
		if batch := l.box.take(); len(batch) > 0 {
			l.step(batch)
		}
	}
}

func (l *Loop) step(batch []state.Action) {
	l.stepping.Store(time.Now().UnixNano())
	defer l.stepping.Store(0)
	prev := *l.cur.Load()
	s := prev
	t0 := time.Now()
	var routes []state.TableRouteApplied
	for i, a := range batch {
		// A run of route results (one per route the dataplane took) is
		// reduced as one step: the State is the same, the cost a fraction.
		if r, ok := a.(state.TableRouteApplied); ok {
			routes = append(routes, r)
			if _, next := nextAction(batch, i).(state.TableRouteApplied); !next {
				s = reducer.ReduceRouteResults(s, routes)
				l.metrics.actionN(a, len(routes))
				routes = routes[:0]
			}
		} else {
			before := s
			s = reducer.Reduce(s, a)
			l.metrics.sessionChanged(before, s, a)
			l.metrics.action(a)
		}
		l.journal.Add(a, l.now())
	}
	t1 := time.Now()
	effs, at, alarm := takeAlarm(effects.Diff(prev, s))
	if alarm {
		l.alarm.set(at)
	}
	l.metrics.reduced(t1.Sub(t0), time.Since(t1))
	l.metrics.stateChanged(prev, s)
	l.cur.Store(&s)
	for _, p := range l.publish {
		p(s)
	}
	logActions(l.log, prev, batch)
	if len(effs) > 0 {
		l.pendingQ.Add(1)
		l.work <- effs
	} else if s.AllSynced() && l.pendingQ.Load() == 0 {
		l.ready.Store(true)
	}
}

func nextAction(batch []state.Action, i int) state.Action {
	if i+1 < len(batch) {
		return batch[i+1]
	}
	return nil
}

// runEffects executes effect batches in order, off the loop, and feeds
// their results back as actions.
func (l *Loop) runEffects(ctx context.Context, done chan struct{}) {
	defer close(done)
	for effs := range l.work {
		l.running.Store(time.Now().UnixNano())
		speaker, dataplane, watches := effects.Group(effs)
		for _, e := range watches {
			l.secretEffect(e)
		}
		for _, r := range l.execute(ctx, l.speaker, speaker) {
			l.Dispatch(r)
		}
		for _, r := range l.execute(ctx, l.dataplane, dataplane) {
			l.Dispatch(r)
		}
		if l.log.Enabled(ctx, slog.LevelDebug) { // String is not free: skip it unless logged
			for _, e := range effs {
				l.log.Debug("effect", "effect", e.String())
			}
		}
		l.running.Store(0)
		if l.pendingQ.Add(-1) == 0 && l.State().AllSynced() {
			l.ready.Store(true)
		}
	}
}

func (l *Loop) execute(ctx context.Context, ex effects.Executor, effs []effects.Effect) []state.Action {
	if len(effs) == 0 || ex == nil {
		return nil
	}
	res := ex.Execute(ctx, effs)
	l.metrics.executed(effs, res)
	return res
}

func (l *Loop) secretEffect(e effects.Effect) {
	switch e.(type) {
	case effects.WatchServices, effects.UnwatchServices:
		l.serviceEffect(e)
		return
	}
	if l.secrets == nil {
		return
	}
	l.metrics.watched(e)
	switch e := e.(type) {
	case effects.WatchSecret:
		l.secrets.Watch(e.Name)
	case effects.UnwatchSecret:
		l.secrets.Unwatch(e.Name)
	}
}

func (l *Loop) serviceEffect(e effects.Effect) {
	if l.svcs == nil {
		return
	}
	l.metrics.watched(e)
	if _, ok := e.(effects.WatchServices); ok {
		l.svcs.WatchServices()
	} else {
		l.svcs.UnwatchServices()
	}
}

// logActions logs a batch reduced from prev. A session's state change is
// logged at info when it reaches or leaves Established or GoBGP gave a
// reason, else at debug: the steps between (active, opensent,
// openconfirm) are three lines per neighbor at every start, a write each.
// What it left is the state last reported for it, in this batch or in
// prev. What a line not logged at the level in force would cost (its
// attributes, the session's lookup) is not paid.
func logActions(log *slog.Logger, prev state.State, batch []state.Action) {
	ctx := context.Background()
	sessions := log.Enabled(ctx, slog.LevelInfo) // else no session line is logged
	debug := log.Enabled(ctx, slog.LevelDebug)
	var was sessionsSeen
	for _, a := range batch {
		sc, ok := a.(state.SessionStateChanged)
		if !ok {
			logAction(log, a)
			continue
		}
		if !sessions {
			continue
		}
		info := sc.State == established || sc.Reason != ""
		if !info { // it is info if it leaves Established
			before, seen := was.get(sc.Address)
			if !seen {
				if x, ok := prev.Out.Sessions.Get(state.AddrKey(sc.Address.Unmap())); ok {
					before = x.BGP
				}
			}
			info = before == established
		}
		was.set(sc.Address, sc.State)
		level := slog.LevelInfo
		if !info {
			if !debug {
				continue
			}
			level = slog.LevelDebug
		}
		log.Log(ctx, level, "session", "address", sc.Address, "state", sc.State, "reason", sc.Reason)
	}
}

// sessionsSeen are the session states last reported in a batch, by
// address: a short list, searched in turn, until it is long enough for a
// map (a batch with a change of every session).
type sessionsSeen struct {
	list [16]sessionSeen
	n    int
	m    map[netip.Addr]string
}

type sessionSeen struct {
	addr  netip.Addr
	state string
}

func (w *sessionsSeen) get(addr netip.Addr) (string, bool) {
	if w.m != nil {
		st, ok := w.m[addr]
		return st, ok
	}
	for _, x := range w.list[:w.n] {
		if x.addr == addr {
			return x.state, true
		}
	}
	return "", false
}

func (w *sessionsSeen) set(addr netip.Addr, st string) {
	if w.m != nil {
		w.m[addr] = st
		return
	}
	for i := range w.list[:w.n] {
		if w.list[i].addr == addr {
			w.list[i].state = st
			return
		}
	}
	if w.n < len(w.list) {
		w.list[w.n] = sessionSeen{addr, st}
		w.n++
		return
	}
	w.m = make(map[netip.Addr]string, 2*len(w.list))
	for _, x := range w.list {
		w.m[x.addr] = x.state
	}
	w.m[addr] = st
}

// established is GoBGP's name of the state (state.Session.BGP).
const established = "established"

// logAction logs what happened, at debug level for the routine and warn
// for failures. Actions print through their journal form: no secret text.
func logAction(log *slog.Logger, a state.Action) {
	switch a := a.(type) {
	case state.PeerApplyFailed:
		log.Warn("peer apply failed", "address", a.Address, "gen", a.Gen, "error", a.Error)
	case state.TableRouteApplyFailed:
		log.Warn("route apply failed", "prefix", a.Prefix, "gen", a.Gen, "error", a.Error)
	case state.PathApplyFailed:
		log.Warn("path apply failed", "prefix", a.Prefix, "gen", a.Gen, "error", a.Error)
	case state.RoutesListed:
		log.Info("own routes listed", "dataplane", a.Dataplane, "routes", len(a.Routes), "error", a.Error)
	case state.ServerApplyFailed:
		log.Error("bgp server failed", "error", a.Error)
	default:
		if log.Enabled(context.Background(), slog.LevelDebug) {
			raw, _ := state.EncodeAction(a)
			log.Debug("action", "action", string(raw))
		}
	}
}
