package agent

import (
	"maps"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/buildinfo"
	"github.com/peeragent/peeragent/state"
)

// Metrics are the agent's Prometheus metrics. Labels are kinds, phases,
// states and results, except the neighbor breakdown (neighbors.go), whose
// address labels are bounded: never a secret-bearing value.
type Metrics struct {
	Registry *prometheus.Registry
	actions  *prometheus.CounterVec
	reduce   prometheus.Histogram
	diff     prometheus.Histogram
	effects  *prometheus.CounterVec
	flaps    prometheus.Counter
	routes   *routeCounts
	// kinds are the counters of actions made so far, by kind: replaced
	// (under mu), never modified.
	kinds atomic.Pointer[map[string]prometheus.Counter]
	mu    sync.Mutex
}

// NewMetrics registers every metric on a fresh registry, with the Go
// runtime's and the process's collectors and peeragent_build_info.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "peeragent_actions_total",
			Help: "Actions reduced, by action kind."}, []string{"kind"}),
		reduce: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "peeragent_reduce_seconds",
			Help: "Time to reduce one batch of actions.", Buckets: prometheus.ExponentialBuckets(1e-6, 4, 12)}),
		diff: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "peeragent_diff_seconds",
			Help: "Time to diff two consecutive states.", Buckets: prometheus.ExponentialBuckets(1e-6, 4, 12)}),
		effects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "peeragent_effects_total",
			Help: "Effects by effect kind (add-peer, set-policy, ...) and result: issued, then applied, failed or skipped."},
			[]string{"kind", "result"}),
		flaps: prometheus.NewCounter(prometheus.CounterOpts{Name: "peeragent_session_flaps_total",
			Help: "Times a session left Established, over every neighbor this process has had."}),
		routes: newRouteCounts(),
	}
	m.kinds.Store(&map[string]prometheus.Counter{})
	bi := prometheus.NewGauge(prometheus.GaugeOpts{Name: buildinfo.MetricName, Help: buildinfo.MetricHelp,
		ConstLabels: buildinfo.Read().Labels()})
	bi.Set(1)
	m.Registry.MustRegister(m.actions, m.reduce, m.diff, m.effects, m.flaps, bi,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *Metrics) action(a state.Action) { m.actionN(a, 1) }

// actionN counts n actions of a's kind. The counter of each kind is kept
// once made (by its first action, as WithLabelValues makes it): the
// vector's lookup hashes the label under a lock, for every action.
func (m *Metrics) actionN(a state.Action, n int) {
	name := a.ActionName()
	c, ok := (*m.kinds.Load())[name]
	if !ok {
		c = m.actions.WithLabelValues(name)
		m.mu.Lock()
		next := maps.Clone(*m.kinds.Load())
		next[name] = c
		m.kinds.Store(&next)
		m.mu.Unlock()
	}
	c.Add(float64(n))
}

// sessionChanged counts the flaps one action caused, from the session
// before and after it was reduced: a counter kept here, not a sum over
// State, so it never drops when a neighbor (and its Flaps) goes away.
func (m *Metrics) sessionChanged(before, after state.State, a state.Action) {
	sc, ok := a.(state.SessionStateChanged)
	if !ok || before.Out.Sessions == after.Out.Sessions {
		return
	}
	k := state.AddrKey(sc.Address.Unmap())
	x, ok1 := before.Out.Sessions.Get(k)
	y, ok2 := after.Out.Sessions.Get(k)
	if ok1 && ok2 && y.Flaps > x.Flaps {
		m.flaps.Add(float64(y.Flaps - x.Flaps))
	}
}

// reduced records a batch's timings. The State-derived gauges are computed
// at scrape time (stateCollector), so an event's cost never includes a walk
// over every neighbor; those that would walk the routes are counted as
// State changes (routeCounts).
func (m *Metrics) reduced(reduce, diff time.Duration) {
	m.reduce.Observe(reduce.Seconds())
	m.diff.Observe(diff.Seconds())
}

// Watch makes the registry report the gauges of whatever current returns
// and of the route counts the loop keeps (stateChanged); at most
// neighborSeries neighbors get series of their own. A scrape costs
// O(neighbors + problems): it never walks the routes, nor asks the speaker.
func (m *Metrics) Watch(current func() state.State, neighborSeries int) {
	m.Registry.MustRegister(&stateCollector{current: current, routes: m.routes},
		&neighborCollector{current: current, routes: m.routes, max: neighborSeries})
}

// stateChanged takes a step's change of State (or the initial State, from
// the zero one) into the route counts.
func (m *Metrics) stateChanged(prev, next state.State) { m.routes.update(prev, next) }

var (
	neighborsDesc = prometheus.NewDesc("peeragent_neighbors", "Neighbors by lifecycle phase.", []string{"phase"}, nil)
	problemsDesc  = prometheus.NewDesc("peeragent_problems", "Current problems, by object kind.", []string{"kind"}, nil)
	neighborsSum  = prometheus.NewDesc("peeragent_desired_neighbors", "Neighbors this node must have (held back ones included).", nil, nil)
	tableDesc     = prometheus.NewDesc("peeragent_route_table_entries",
		"Route table entries (docs/routes.md §9.7) by phase of their dataplane call.", []string{"phase"}, nil)
	retriesDesc = prometheus.NewDesc("peeragent_retries_total", "Retries that came due after a failed effect.", nil, nil)
	repairsDesc = prometheus.NewDesc("peeragent_route_repairs_total",
		"Routes a rescan found missing, different or unknown in the dataplane, applied or removed again (docs/routes.md §9.7 rule 6).", nil, nil)
	advertisedDesc = prometheus.NewDesc("peeragent_own_paths",
		"Own paths (blocks, borrowed addresses, services: docs/routes.md §8) the speaker advertises, before each neighbor's export policy.", nil, nil)
)

// tablePhases are the values of peeragent_route_table_entries' phase label.
var tablePhases = []state.RoutePhase{state.RoutePhasePending, state.RoutePhaseApplied, state.RoutePhaseFailed,
	state.RoutePhaseSkipped, state.RoutePhaseAdopted, state.RoutePhaseHeld}

type stateCollector struct {
	current func() state.State
	routes  *routeCounts
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- neighborsDesc
	ch <- problemsDesc
	ch <- neighborsSum
	ch <- tableDesc
	ch <- repairsDesc
	ch <- advertisedDesc
	ch <- retriesDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.current()
	phases := map[state.Phase]float64{}
	for _, p := range []state.Phase{state.PhaseWaiting, state.PhaseConfiguring, state.PhaseConfigured,
		state.PhaseEstablished, state.PhaseUpdating, state.PhaseDeleting, state.PhaseFailed} {
		phases[p] = 0
	}
	s.Out.Sessions.Range(func(_ string, x *state.Session) bool {
		phases[x.Phase]++
		return true
	})
	for p, v := range phases {
		ch <- prometheus.MustNewConstMetric(neighborsDesc, prometheus.GaugeValue, v, p.String())
	}
	ch <- prometheus.MustNewConstMetric(neighborsSum, prometheus.GaugeValue, float64(s.Out.Neighbors.Len()))
	kinds := map[string]float64{}
	for _, p := range s.AllProblems() {
		kinds[problemKind(p.Object)]++
	}
	for k, v := range kinds {
		ch <- prometheus.MustNewConstMetric(problemsDesc, prometheus.GaugeValue, v, k)
	}
	_, entries := c.routes.snapshot()
	for _, p := range tablePhases {
		ch <- prometheus.MustNewConstMetric(tableDesc, prometheus.GaugeValue, float64(entries[p]), string(p))
	}
	ch <- prometheus.MustNewConstMetric(repairsDesc, prometheus.CounterValue, float64(s.Routing.Repairs))
	ch <- prometheus.MustNewConstMetric(advertisedDesc, prometheus.GaugeValue, float64(s.Out.Advertised.Len()))
	ch <- prometheus.MustNewConstMetric(retriesDesc, prometheus.CounterValue, float64(s.Retries))
}

func problemKind(object string) string {
	for i := 0; i < len(object); i++ {
		if object[i] == '/' {
			return object[:i]
		}
	}
	return object
}

// executed counts a batch's effects as issued and each one's result under
// the same fine kind: a result (one per address and generation, or per
// server effect) settles every effect of the batch it answers.
func (m *Metrics) executed(effs []effects.Effect, results []state.Action) {
	result := map[effects.Ref]string{}
	type tableKey struct {
		prefix netip.Prefix
		gen    uint64
	}
	table := make(map[tableKey]string, len(results))
	paths := map[tableKey]string{} // own path calls (docs/routes.md §10)
	rescans := map[uint64]string{} // docs/routes.md §9.7 rule 6
	server := ""
	for _, r := range results {
		switch r := r.(type) {
		case state.PeerApplied:
			result[effects.Ref{Addr: r.Address, Gen: r.Gen}] = "applied"
		case state.PeerApplyFailed:
			result[effects.Ref{Addr: r.Address, Gen: r.Gen}] = "failed"
		case state.TableRouteApplied:
			res := "applied"
			if r.Skipped {
				res = "skipped"
			}
			table[tableKey{r.Prefix, r.Gen}] = res
		case state.TableRouteApplyFailed:
			table[tableKey{r.Prefix, r.Gen}] = "failed"
		case state.PathApplied:
			paths[tableKey{r.Prefix, r.Gen}] = "applied"
		case state.PathApplyFailed:
			paths[tableKey{r.Prefix, r.Gen}] = "failed"
		case state.ServerApplied:
			server = "applied"
		case state.ServerApplyFailed:
			server = "failed"
		case state.RoutesRescanned:
			rescans[r.Seq] = "applied"
			if r.Error != "" {
				rescans[r.Seq] = "failed"
			}
		}
	}
	// Counted per label pair, then added: a batch of 100,000 route calls
	// is a few counter updates, not 200,000.
	type labels struct{ kind, result string }
	counts := map[labels]int{}
	for _, e := range effs {
		ref := e.Ref()
		kind := ref.Kind.String()
		counts[labels{kind, "issued"}]++
		var res string
		switch k := ref.Kind; {
		case k.Peer():
			res = result[effects.Ref{Addr: ref.Addr, Gen: ref.Gen}]
		case k == effects.KindReplaceRoute || k == effects.KindRemoveRoute:
			res = table[tableKey{routePrefix(e), ref.Gen}]
		case k == effects.KindAddPath || k == effects.KindDeletePath:
			res = paths[tableKey{routePrefix(e), ref.Gen}]
		case k == effects.KindRescanRoutes:
			res = rescans[e.(effects.RescanRoutes).Seq]
		case k.Speaker():
			res = server
		}
		if res != "" {
			counts[labels{kind, res}]++
		}
	}
	for l, n := range counts {
		m.effects.WithLabelValues(l.kind, l.result).Add(float64(n))
	}
}

// watched counts secret watch effects, which the loop carries out itself
// and which cannot fail.
func (m *Metrics) watched(e effects.Effect) {
	kind := e.Ref().Kind.String()
	m.effects.WithLabelValues(kind, "issued").Inc()
	m.effects.WithLabelValues(kind, "applied").Inc()
}

// routePrefix is the prefix a route-table effect is about.
func routePrefix(e effects.Effect) netip.Prefix {
	switch e := e.(type) {
	case effects.ReplaceRoute:
		return e.Route.Prefix
	case effects.RemoveRoute:
		return e.Prefix
	case effects.AddPath:
		return e.Path.Prefix
	case effects.DeletePath:
		return e.Prefix
	}
	return netip.Prefix{}
}
