package agent

import (
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/peeragent/peeragent/state"
)

// DefaultNeighborSeries bounds the per-neighbor breakdown unless
// LoopConfig.NeighborSeries says otherwise (run's --metrics-neighbor-series):
// at most this many neighbors that are not mesh peers (the first in
// address order) get series of their own, and peeragent_neighbor_series_omitted
// counts the others. The mesh, which grows with the cluster, is only ever
// aggregated (peeragent_sessions, peeragent_learned_routes), as is every neighbor.
const DefaultNeighborSeries = 64

// bgpStates are the values of the state label, GoBGP's session states.
var bgpStates = []string{"idle", "connect", "active", "opensent", "openconfirm", "established"}

var (
	sessionsDesc = prometheus.NewDesc("peeragent_sessions",
		"Neighbors by group (mesh: the node-to-node mesh; peer: BGPPeers) and BGP session state.",
		[]string{"group", "state"}, nil)
	learnedDesc = prometheus.NewDesc("peeragent_learned_routes",
		"Learned prefixes whose best paths include a path from a neighbor of the group (the routes taken from it), summed over the group's neighbors.",
		[]string{"group"}, nil)
	neighborStateDesc = prometheus.NewDesc("peeragent_neighbor_session_state",
		"1 for the BGP session state a neighbor that is not a mesh peer is in, 0 for the others.",
		[]string{"neighbor", "origin", "state"}, nil)
	neighborLearnedDesc = prometheus.NewDesc("peeragent_neighbor_learned_routes",
		"Learned prefixes whose best paths include a path from a neighbor that is not a mesh peer.",
		[]string{"neighbor", "origin"}, nil)
	omittedDesc = prometheus.NewDesc("peeragent_neighbor_series_omitted",
		"Neighbors that are not mesh peers left out of the per-neighbor series (peeragent_neighbor_*) by their cap (--metrics-neighbor-series).",
		nil, nil)
)

// neighborCollector reports sessions from State and learned-route counts
// from the counts the loop keeps (routeCounts), at scrape time. The
// speaker's own counts (received before and accepted after the import
// policy, advertised) cost a walk of each neighbor's Adj-RIBs: only
// /neighbors/ADDRESS reads them, one neighbor at a time, on the loopback.
type neighborCollector struct {
	current func() state.State
	routes  *routeCounts
	max     int // neighbors with series of their own
}

func (c *neighborCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sessionsDesc
	ch <- learnedDesc
	ch <- neighborStateDesc
	ch <- neighborLearnedDesc
	ch <- omittedDesc
}

type breakout struct {
	addr   netip.Addr
	origin string
	state  string
}

func group(origin string) string {
	if origin == "mesh" {
		return "mesh"
	}
	return "peer"
}

func (c *neighborCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.current()
	counts := map[string]map[string]float64{"mesh": {}, "peer": {}}
	groups := map[netip.Addr]string{}
	var out []breakout
	omitted := 0
	s.Out.Neighbors.Range(func(k string, n *state.Neighbor) bool {
		bgp := "idle"
		if x, ok := s.Out.Sessions.Get(k); ok && x.BGP != "" {
			bgp = x.BGP
		}
		g := group(n.Origin)
		counts[g][bgp]++
		groups[n.Address] = g
		if g == "peer" && len(out) < c.max {
			out = append(out, breakout{n.Address, n.Origin, bgp})
		} else if g == "peer" {
			omitted++
		}
		return true
	})
	for _, g := range []string{"mesh", "peer"} {
		for _, st := range bgpStates {
			ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, counts[g][st], g, st)
		}
	}
	ch <- prometheus.MustNewConstMetric(omittedDesc, prometheus.GaugeValue, float64(omitted))
	for _, b := range out {
		for _, st := range bgpStates {
			v := 0.0
			if st == b.state {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(neighborStateDesc, prometheus.GaugeValue, v, b.addr.String(), b.origin, st)
		}
	}
	learned, _ := c.routes.snapshot()
	sums := map[string]float64{"mesh": 0, "peer": 0}
	for a, n := range learned {
		if g, ok := groups[a]; ok {
			sums[g] += float64(n)
		}
	}
	for _, g := range []string{"mesh", "peer"} {
		ch <- prometheus.MustNewConstMetric(learnedDesc, prometheus.GaugeValue, sums[g], g)
	}
	for _, b := range out {
		ch <- prometheus.MustNewConstMetric(neighborLearnedDesc, prometheus.GaugeValue, float64(learned[b.addr]), b.addr.String(), b.origin)
	}
}
