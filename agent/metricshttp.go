package agent

import (
	"context"
	"net/http"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// MetricsHandler serves GET /metrics and nothing else: what the metrics
// address (--metrics-addr, reachable by an in-cluster Prometheus) exposes,
// apart from the loopback endpoints of Handler, which show the State.
func MetricsHandler(l *Loop) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metricsHandler(l))
	return mux
}

func metricsHandler(l *Loop) http.Handler {
	return promhttp.HandlerFor(l.metrics.Registry, promhttp.HandlerOpts{})
}

// NeighborDetail is what GET /neighbors/{address} serves: the neighbor as
// State has it (the /state dump's forms: the password as a fingerprint)
// and, when the speaker can say, the speaker's own view.
type NeighborDetail struct {
	Neighbor *state.Neighbor `json:"neighbor,omitempty"`
	Session  *state.Session  `json:"session,omitempty"`
	Problems []state.Problem `json:"problems,omitempty"`
	// Route is the route table's entry for the neighbor's host prefix
	// (its reachableBy route, docs/routes.md §9.7 rule 3), if any.
	Route *state.TableRoute `json:"route,omitempty"`
	// Routes counts the learned prefixes of the neighbor's best paths:
	// installed, refused (docs/routes.md §9.2), pending.
	Routes  state.NeighborRoutes  `json:"routes"`
	Speaker *effects.NeighborInfo `json:"speaker,omitempty"`
	// SpeakerError says why Speaker is missing, when a read failed.
	SpeakerError string `json:"speakerError,omitempty"`
}

// neighborDetail serves GET /neighbors/{address}: 404 when the address is
// neither a neighbor in State nor one the speaker has.
func neighborDetail(l *Loop) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		addr, err := netip.ParseAddr(r.PathValue("address"))
		if err != nil {
			http.Error(w, "not an IP address: "+r.PathValue("address"), http.StatusBadRequest)
			return
		}
		addr = addr.Unmap()
		s := l.State()
		var d NeighborDetail
		k := state.AddrKey(addr)
		if n, ok := s.Out.Neighbors.Get(k); ok {
			d.Neighbor = n
		}
		if x, ok := s.Out.Sessions.Get(k); ok {
			d.Session = x
		}
		if ps, ok := s.Out.Problems.Get("addr/" + k); ok {
			d.Problems = ps
		}
		if r, ok := s.Out.Routes.Get(state.PrefixKey(netip.PrefixFrom(addr, addr.BitLen()))); ok {
			d.Route = r
		}
		d.Routes = s.RoutesFrom(addr)
		if l.inspector != nil {
			ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
			defer cancel()
			infos, err := l.inspector.Inspect(ctx, addr, true)
			switch {
			case err != nil:
				d.SpeakerError = err.Error()
			case len(infos) == 1:
				d.Speaker = &infos[0]
			}
		}
		if d.Neighbor == nil && d.Session == nil && d.Speaker == nil {
			http.Error(w, "no neighbor "+addr.String(), http.StatusNotFound)
			return
		}
		writeJSON(w, d)
	}
}
