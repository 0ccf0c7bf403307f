package agent

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// Metrics are the agent's Prometheus metrics. Labels are kinds, phases
// and results: never an address-sized or secret-bearing value.
type Metrics struct {
	Registry *prometheus.Registry
	actions  *prometheus.CounterVec
	reduce   prometheus.Histogram
	diff     prometheus.Histogram
	effects  *prometheus.CounterVec
	retries  prometheus.Counter
}

// NewMetrics registers every metric on a fresh registry.
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
			Help: "Effects executed, by effect kind and result (applied, failed, skipped)."}, []string{"kind", "result"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Name: "peeragent_retries_total",
			Help: "Retries that came due after a failed effect."}),
	}
	m.Registry.MustRegister(m.actions, m.reduce, m.diff, m.effects, m.retries)
	return m
}

func (m *Metrics) action(a state.Action) {
	m.actions.WithLabelValues(a.ActionName()).Inc()
	if _, ok := a.(state.RetryDue); ok {
		m.retries.Inc()
	}
}

// reduced records a batch's timings. The State-derived gauges are computed
// at scrape time (stateCollector), so an event's cost never includes a walk
// over every neighbor.
func (m *Metrics) reduced(reduce, diff time.Duration) {
	m.reduce.Observe(reduce.Seconds())
	m.diff.Observe(diff.Seconds())
}

// Watch makes the registry report the gauges of whatever current returns.
func (m *Metrics) Watch(current func() state.State) {
	m.Registry.MustRegister(&stateCollector{current: current})
}

var (
	neighborsDesc = prometheus.NewDesc("peeragent_neighbors", "Neighbors by lifecycle phase.", []string{"phase"}, nil)
	flapsDesc     = prometheus.NewDesc("peeragent_session_flaps", "Sum over current neighbors of the times their session left Established.", nil, nil)
	problemsDesc  = prometheus.NewDesc("peeragent_problems", "Current problems, by object kind.", []string{"kind"}, nil)
	neighborsSum  = prometheus.NewDesc("peeragent_desired_neighbors", "Neighbors this node must have (held back ones included).", nil, nil)
)

type stateCollector struct{ current func() state.State }

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- neighborsDesc
	ch <- flapsDesc
	ch <- problemsDesc
	ch <- neighborsSum
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.current()
	phases := map[state.Phase]float64{}
	for _, p := range []state.Phase{state.PhaseWaiting, state.PhaseConfiguring, state.PhaseConfigured,
		state.PhaseEstablished, state.PhaseUpdating, state.PhaseDeleting, state.PhaseFailed} {
		phases[p] = 0
	}
	flaps := 0
	s.Out.Sessions.Range(func(_ string, x *state.Session) bool {
		phases[x.Phase]++
		flaps += x.Flaps
		return true
	})
	for p, v := range phases {
		ch <- prometheus.MustNewConstMetric(neighborsDesc, prometheus.GaugeValue, v, p.String())
	}
	ch <- prometheus.MustNewConstMetric(flapsDesc, prometheus.GaugeValue, float64(flaps))
	ch <- prometheus.MustNewConstMetric(neighborsSum, prometheus.GaugeValue, float64(s.Out.Neighbors.Len()))
	kinds := map[string]float64{}
	for _, p := range s.AllProblems() {
		kinds[problemKind(p.Object)]++
	}
	for k, v := range kinds {
		ch <- prometheus.MustNewConstMetric(problemsDesc, prometheus.GaugeValue, v, k)
	}
}

func problemKind(object string) string {
	for i := 0; i < len(object); i++ {
		if object[i] == '/' {
			return object[:i]
		}
	}
	return object
}

func (m *Metrics) executed(effs []effects.Effect, results []state.Action) {
	for _, e := range effs {
		m.effects.WithLabelValues(effectKind(e), "issued").Inc()
	}
	for _, r := range results {
		switch r := r.(type) {
		case state.PeerApplied, state.ServerApplied:
			m.effects.WithLabelValues("peer", "applied").Inc()
		case state.RouteApplied:
			result := "applied"
			if r.Skipped {
				result = "skipped"
			}
			m.effects.WithLabelValues("route", result).Inc()
		case state.PeerApplyFailed, state.ServerApplyFailed:
			m.effects.WithLabelValues("peer", "failed").Inc()
		case state.RouteApplyFailed, state.TableRouteApplyFailed:
			m.effects.WithLabelValues("route", "failed").Inc()
		case state.TableRouteApplied:
			result := "applied"
			if r.Skipped {
				result = "skipped"
			}
			m.effects.WithLabelValues("route", result).Inc()
		}
	}
}

// effectKind is the first word of the effect's String, without building
// the string: this runs for every effect executed.
func effectKind(e effects.Effect) string { return e.Ref().Kind.String() }
