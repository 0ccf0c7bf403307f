package main

import (
	"fmt"
	"strings"
)

// Benchmark names the targets read.
const (
	convMesh   = "BenchmarkConvergence/mesh=1000"
	convPeers  = "BenchmarkConvergence/peers=10000"
	churnGoBGP = "BenchmarkChurn/gobgp"
	churnCore  = "BenchmarkChurn/instant"
	memState   = "BenchmarkMemory/state"
	memChurn   = "BenchmarkMemory/churn=100000"
	ownPaths   = "BenchmarkOwnPaths"
	learned    = "BenchmarkLearnedInstall/routes=" // + the number of routes
	learnedMax = learned + "100000"
	bestPath   = "BenchmarkBestPathChange"
	scrape     = "BenchmarkScrape/routes=100000"
	routeHeap  = "BenchmarkLearnedHeap/routes=100000"
)

// target is one performance goal of the agent and how to read it from the
// results; the list is the contract docs/performance.md reports against.
type target struct {
	what  string // the goal, in words
	bench string
	unit  string
	ok    func(v float64) bool
	show  func(v float64) string
}

func atMost(limit float64) func(float64) bool  { return func(v float64) bool { return v <= limit } }
func atLeast(limit float64) func(float64) bool { return func(v float64) bool { return v >= limit } }
func below(limit float64) func(float64) bool   { return func(v float64) bool { return v < limit } }

func format(f string) func(float64) string {
	return func(v float64) string { return fmt.Sprintf(f, v) }
}

// flatGrowth is how much the live heap may grow over the second half of
// the long churn and still count as flat. The first half holds a one-time
// step (see memoryText); a leak would grow in both halves alike.
const flatGrowth = 1

var targets = []target{
	{"convergence of 10,000 BGPPeers within 1.25x of the GoBGP floor", convPeers, "agent/floor", atMost(1.25), format("%.2fx")},
	{"convergence of 10,000 BGPPeers within 10 s", convPeers, "agent-s", atMost(10), format("%.1f s")},
	{"convergence of a 1,000-node mesh within 1.25x of the GoBGP floor", convMesh, "agent/floor", atMost(1.25), format("%.2fx")},
	{"churn: at least 5,000 in-place changes/s sustained with 10,000 neighbors", churnGoBGP, "steady-events/s", atLeast(5000), format("%.0f/s")},
	{"churn: p99 dispatch-to-call of in-place changes under 5 ms", churnGoBGP, "p99-ms", below(5), ms},
	{"churn: keeps up with 2,500 in-place changes/s offered, 10,000 neighbors, stock GoBGP v4.8.0 (at least 99% of the rate)", churnGoBGP, "sustain-events/s", atLeast(2475), format("%.0f/s")},
	{"churn: p99 dispatch-to-call under 5 ms at 2,500 changes/s", churnGoBGP, "sustain-p99-ms", below(5), ms},
	{"churn: the flooded agent at least 0.9x a bare loop of the same GoBGP calls", churnGoBGP, "max/floor", atLeast(0.9), format("%.2fx")},
	{"churn: at least 100x the old way's throughput", churnGoBGP, "max/old", atLeast(100), format("%.0fx")},
	{"10,000 own paths in GoBGP's RIB within 1.25x of a bare AddPath loop", ownPaths, "agent/floor", atMost(1.25), format("%.2fx")},
	{"100,000 learned prefixes from one peer in the kernel within 1.25x of a bare netlink loop", learnedMax, "ratio", atMost(1.25), format("%.2fx")},
	{"a best-path change reaches the dataplane call with p99 under 5 ms while 10,000 prefixes are installed", bestPath, "p99-ms", below(5), ms},
	{"at most 4 KiB of agent heap per neighbor", memState, "B/neighbor", atMost(4096), func(v float64) string { return count(v) + " B" }},
	{"at most 512 B of agent heap per learned route", learnedMax, "heap-B/route", atMost(512), func(v float64) string { return count(v) + " B" }},
	{"at most 2 KiB of heap per learned route, agent and speaker", routeHeap, "total-B/route", atMost(2048), func(v float64) string { return count(v) + " B" }},
	{"a /metrics scrape at 100,000 learned routes within 10 ms", scrape, "ns/op", atMost(10e6), func(v float64) string { return ms(v / 1e6) }},
	{fmt.Sprintf("heap flat over a 100,000-event churn (the second 50,000 grow it at most %d%%)", flatGrowth),
		memChurn, "late-growth-%", atMost(flatGrowth), format("%+.1f%%")},
}

// scorecard is the targets table: goal, measured median, met or not.
func scorecard(r results) (string, int, int) {
	var b strings.Builder
	b.WriteString("| target | measured (median) | met |\n|---|---|---|\n")
	met, total := 0, 0
	for _, t := range targets {
		v, ok := r.median(t.bench, t.unit)
		if !ok {
			fmt.Fprintf(&b, "| %s | not run | - |\n", t.what)
			continue
		}
		total++
		verdict := "**no**"
		if t.ok(v) {
			verdict = "yes"
			met++
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", t.what, t.show(v), verdict)
	}
	return b.String(), met, total
}
