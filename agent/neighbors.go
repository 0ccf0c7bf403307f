package agent

import (
	"context"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// DefaultNeighborSeries bounds the per-neighbor breakdown unless
// LoopConfig.NeighborSeries says otherwise (run's --metrics-neighbor-series):
// at most this many neighbors that are not mesh peers (the first in
// address order) get series of their own, and peeragent_neighbor_series_omitted
// counts the others. The mesh, which grows with the cluster, is only ever
// aggregated (peeragent_sessions, peeragent_routes), as is every neighbor.
const DefaultNeighborSeries = 64

// inspectTimeout bounds the speaker reads of one scrape.
const inspectTimeout = 2 * time.Second

// bgpStates are the values of the state label, GoBGP's session states.
var bgpStates = []string{"idle", "connect", "active", "opensent", "openconfirm", "established"}

var (
	sessionsDesc = prometheus.NewDesc("peeragent_sessions",
		"Neighbors by group (mesh: the node-to-node mesh; peer: BGPPeers) and BGP session state.",
		[]string{"group", "state"}, nil)
	routesDesc = prometheus.NewDesc("peeragent_routes",
		"Paths received from neighbors, before (received) and after (accepted) the import policy, by group.",
		[]string{"group", "direction"}, nil)
	neighborStateDesc = prometheus.NewDesc("peeragent_neighbor_session_state",
		"1 for the BGP session state a neighbor that is not a mesh peer is in, 0 for the others.",
		[]string{"neighbor", "origin", "state"}, nil)
	neighborRoutesDesc = prometheus.NewDesc("peeragent_neighbor_routes",
		"Paths of a neighbor that is not a mesh peer: received, accepted (after the import policy) and advertised to it.",
		[]string{"neighbor", "origin", "direction"}, nil)
	omittedDesc = prometheus.NewDesc("peeragent_neighbor_series_omitted",
		"Neighbors that are not mesh peers left out of the per-neighbor series (peeragent_neighbor_*) by their cap (--metrics-neighbor-series).",
		nil, nil)
)

// neighborCollector reports sessions from State and route counts from the
// speaker, at scrape time.
type neighborCollector struct {
	current func() state.State
	ins     effects.Inspector
	max     int // neighbors with series of their own
}

func (c *neighborCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sessionsDesc
	ch <- routesDesc
	ch <- neighborStateDesc
	ch <- neighborRoutesDesc
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
	origins := map[netip.Addr]string{}
	var out []breakout
	omitted := 0
	s.Out.Neighbors.Range(func(k string, n *state.Neighbor) bool {
		bgp := "idle"
		if x, ok := s.Out.Sessions.Get(k); ok && x.BGP != "" {
			bgp = x.BGP
		}
		g := group(n.Origin)
		counts[g][bgp]++
		origins[n.Address] = g
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
	if c.ins != nil {
		c.collectRoutes(ch, origins, out)
	}
}

// collectRoutes reads every neighbor's received and accepted counts in one
// call, then the advertised count of each broken-out neighbor (a walk of
// its Adj-RIB-Out each, so only for those). A speaker that does not answer
// leaves the route series out of this scrape.
func (c *neighborCollector) collectRoutes(ch chan<- prometheus.Metric, origins map[netip.Addr]string, out []breakout) {
	ctx, cancel := context.WithTimeout(context.Background(), inspectTimeout)
	defer cancel()
	all, err := c.ins.Inspect(ctx, netip.Addr{}, false)
	if err != nil {
		return
	}
	sums := map[string][2]float64{"mesh": {}, "peer": {}}
	byAddr := map[netip.Addr]effects.NeighborInfo{}
	for _, n := range all {
		byAddr[n.Address] = n
		g, ok := origins[n.Address]
		if !ok {
			continue
		}
		v := sums[g]
		v[0] += float64(n.Received)
		v[1] += float64(n.Accepted)
		sums[g] = v
	}
	for _, g := range []string{"mesh", "peer"} {
		ch <- prometheus.MustNewConstMetric(routesDesc, prometheus.GaugeValue, sums[g][0], g, "received")
		ch <- prometheus.MustNewConstMetric(routesDesc, prometheus.GaugeValue, sums[g][1], g, "accepted")
	}
	for _, b := range out {
		n, ok := byAddr[b.addr]
		if !ok {
			continue
		}
		addr, origin := b.addr.String(), b.origin
		ch <- prometheus.MustNewConstMetric(neighborRoutesDesc, prometheus.GaugeValue, float64(n.Received), addr, origin, "received")
		ch <- prometheus.MustNewConstMetric(neighborRoutesDesc, prometheus.GaugeValue, float64(n.Accepted), addr, origin, "accepted")
		if one, err := c.ins.Inspect(ctx, b.addr, true); err == nil && len(one) == 1 && one[0].Advertised != nil {
			ch <- prometheus.MustNewConstMetric(neighborRoutesDesc, prometheus.GaugeValue, float64(*one[0].Advertised), addr, origin, "advertised")
		}
	}
}
