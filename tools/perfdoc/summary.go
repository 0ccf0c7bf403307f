package main

import (
	"fmt"
	"math"
	"strings"
)

// summary says in words what the results mean, paragraph by paragraph;
// a paragraph whose benchmarks did not run is left out.
func summary(r results) string {
	g := func(name, unit string) float64 {
		if v, ok := r.median(name, unit); ok {
			return v
		}
		return math.NaN()
	}
	var b strings.Builder
	for _, p := range []string{convergenceText(g), churnText(g), coreText(g), learnedText(g), routeHeapText(g), scrapeText(g), memoryText(g), limitsText(g)} {
		if p != "" {
			b.WriteString(p + "\n\n")
		}
	}
	return b.String()
}

type getter func(name, unit string) float64

func ok(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) {
			return false
		}
	}
	return true
}

func convergenceText(g getter) string {
	var parts []string
	for _, c := range []struct{ name, what string }{{convMesh, "the 1,000-node mesh"}, {convPeers, "10,000 BGPPeers"}} {
		a, f, ratio, cpu, n := g(c.name, "agent-s"), g(c.name, "floor-s"), g(c.name, "agent/floor"), g(c.name, "cpu-agent/floor"), g(c.name, "neighbors")
		if !ok(a, f, ratio, cpu, n) {
			continue
		}
		parts = append(parts, fmt.Sprintf("Configuring %s (%s neighbors) took the agent %s from its first action "+
			"to the last AddPeer's return, against %s for a bare loop of the same GoBGP calls: %.2fx in wall time, "+
			"%.2fx in CPU time.", c.what, count(n), secs(a), secs(f), ratio, cpu))
	}
	if len(parts) == 0 {
		return ""
	}
	return "**Convergence.** " + strings.Join(parts, " ") + " Most of both is GoBGP's time: on v4 an AddPeer " +
		"costs a few hundred microseconds whatever the number of peers, most of it allocating the new " +
		"neighbor's Adj-RIB-In (the profile below splits the CPU)."
}

func churnText(g getter) string {
	n, fr, f50, f99 := g(churnGoBGP, "neighbors"), g(churnGoBGP, "floor-events/s"), g(churnGoBGP, "floor-p50-ms"), g(churnGoBGP, "floor-p99-ms")
	st, p50, p99, mx := g(churnGoBGP, "steady-events/s"), g(churnGoBGP, "p50-ms"), g(churnGoBGP, "p99-ms"), g(churnGoBGP, "max-events/s")
	old, vsOld, vsFloor := g(churnGoBGP, "old-events/s"), g(churnGoBGP, "max/old"), g(churnGoBGP, "max/floor")
	l50, l99 := g(churnGoBGP, "light-p50-ms"), g(churnGoBGP, "light-p99-ms")
	if !ok(n, fr, f50, f99, st, p50, p99, mx, old, vsOld, vsFloor, l50, l99) {
		return ""
	}
	return fmt.Sprintf("**Churn (in place).** With %s neighbors configured, a plain loop of the churn's own GoBGP calls "+
		"runs at %.0f/s (%s per call at the median, %s at p99). At 50 changes/s, which GoBGP keeps up "+
		"with, the agent's dispatch-to-call latency is %s at the median and %s at p99. Offered 5,000 "+
		"changes/s, the agent sustained %.0f/s, with dispatch-to-call latency p50 %s and p99 %s (what it "+
		"cannot take queues); flooded, it reached %.0f/s, %.2fx the floor's rate. The old way (re-derive "+
		"everything and diff in full on every change) managed %.2f/s: the agent does %.0fx better.",
		count(n), fr, ms(f50), ms(f99), ms(l50), ms(l99), st, ms(p50), ms(p99), mx, vsFloor, old, vsOld) + resetText(g)
}

// resetText is the rate of the session-resetting changes, reported apart.
func resetText(g getter) string {
	r, p50, p99 := g(churnGoBGP, "reset-events/s"), g(churnGoBGP, "reset-p50-ms"), g(churnGoBGP, "reset-p99-ms")
	if !ok(r, p50, p99) {
		return ""
	}
	return fmt.Sprintf(" Resetting changes (password rotations, neighbors moving to and from the route "+
		"reflector), flooded: %.0f/s, dispatch-to-call p50 %s and p99 %s.", r, ms(p50), ms(p99))
}

func coreText(g getter) string {
	st, p50, p99, mx, vsOld := g(churnCore, "steady-events/s"), g(churnCore, "p50-ms"), g(churnCore, "p99-ms"),
		g(churnCore, "max-events/s"), g(churnCore, "max/old")
	if !ok(st, p50, p99, mx, vsOld) {
		return ""
	}
	return fmt.Sprintf("**The agent alone.** Over an executor that confirms every call at once (no GoBGP), the "+
		"same churn offered at 5,000/s is sustained at %s/s with p50 %s and p99 %s from dispatch "+
		"to the call; flooded, the agent handles %s changes/s, %sx the old way on the same executor.",
		count(st), ms(p50), ms(p99), count(mx), count(vsOld))
}

func memoryText(g getter) string {
	per, n := g(memState, "B/neighbor"), g(memState, "neighbors")
	before, mid, after := g(memChurn, "heap-before-MiB"), g(memChurn, "heap-mid-MiB"), g(memChurn, "heap-after-MiB")
	var parts []string
	if hp := g(convPeers, "heap-B/neighbor"); ok(hp) {
		parts = append(parts, fmt.Sprintf("The agent with its embedded GoBGP holds %s KiB of live heap per "+
			"neighbor once 10,099 neighbors are configured (unicast of one family each); that is what the "+
			"DaemonSet's memory is sized from (deploy/base/daemonset.yaml).", count(hp/1024)))
	}
	if ok(per, n) {
		parts = append(parts, fmt.Sprintf("A converged State holds %s bytes of heap per neighbor (%s neighbors, "+
			"its input objects included).", count(per), count(n)))
	}
	if ok(before, mid, after) {
		parts = append(parts, fmt.Sprintf("Over 100,000 churn events, with the previous State kept for every diff, "+
			"the agent's live heap went from %.1f MiB to %.1f MiB after 50,000 and %.1f MiB after 100,000: it "+
			"moves while the churn first replaces every object (the initial lists arrive as one array per "+
			"kind, which stays alive while any of its objects is unchanged, so replaced objects live beside "+
			"it), and the second half shows whether anything grows with the number of events.",
			before, mid, after))
	}
	if len(parts) == 0 {
		return ""
	}
	return "**Memory.** " + strings.Join(parts, " ")
}

// learnedSizes are the BenchmarkLearnedInstall sizes the table shows.
var learnedSizes = []int{1000, 10000, 100000}

// learnedText is the learned routes into the kernel against a bare
// netlink loop, with a table per size, and one best-path change's latency.
func learnedText(g getter) string {
	var b strings.Builder
	f, a, c, res := g(learnedMax, "floor-s"), g(learnedMax, "agent-s"), g(learnedMax, "core-s"), g(learnedMax, "results-s")
	ratio, cpu, heap := g(learnedMax, "ratio"), g(learnedMax, "cpu-ratio"), g(learnedMax, "heap-B/route")
	if ok(f, a, c, res, ratio, cpu, heap) {
		fmt.Fprintf(&b, "100,000 learned prefixes from one peer went into the kernel in %s through the agent (one best-path "+
			"event: Reduce, Diff and the Linux executor's calls), against %s for a bare loop of netlink RouteReplace of the "+
			"same routes: %.2fx in wall time, %.2fx in CPU time. The pure core (Reduce and Diff) took %s of it, "+
			"%.1f µs per route; reducing the 100,000 results afterwards, as the agent loop does, took %s more "+
			"(%.2fx with it). The agent holds %s bytes of heap per learned route (its State and the executor's record of the routes it owns).",
			secs(a), secs(f), ratio, cpu, secs(c), c/100000*1e6, secs(res), g(learnedMax, "ratio-with-results"), count(heap))
	}
	if p99, p50 := g(bestPath, "p99-ms"), g(bestPath, "p50-ms"); ok(p99, p50) {
		fmt.Fprintf(&b, " With 10,000 learned prefixes installed, one prefix's best-path change reaches its dataplane call "+
			"in %s at the median and %s at p99 (Reduce, Diff and an instant dataplane).", ms(p50), ms(p99))
	}
	if b.Len() == 0 {
		return ""
	}
	var rows []string
	for _, n := range learnedSizes {
		name := fmt.Sprintf("%s%d", learned, n)
		v := map[string]float64{}
		for _, u := range []string{"floor-s", "agent-s", "core-s", "results-s", "ratio", "cpu-ratio", "heap-B/route"} {
			v[u] = g(name, u)
		}
		if !ok(v["floor-s"], v["agent-s"]) {
			continue
		}
		rows = append(rows, fmt.Sprintf("| %s | %.3f | %.3f | %.3f | %.3f | %.2fx | %.2fx | %s |", count(float64(n)),
			v["floor-s"], v["agent-s"], v["core-s"], v["results-s"], v["ratio"], v["cpu-ratio"], count(v["heap-B/route"])))
	}
	if len(rows) > 0 {
		b.WriteString("\n\n| routes | floor-s | agent-s | core-s | results-s | ratio | cpu-ratio | heap-B/route |\n" +
			"|---|---|---|---|---|---|---|---|\n" + strings.Join(rows, "\n"))
	}
	return "**Learned routes into the kernel.** " + strings.TrimLeft(b.String(), " ")
}

// limitsText names what bounds each unmet target, from the figures.
func limitsText(g getter) string {
	var out []string
	for _, c := range []string{convMesh, convPeers, learnedMax, ownPaths} {
		wall, cpu := g(c, "agent/floor"), g(c, "cpu-agent/floor")
		if c == learnedMax {
			wall, cpu = g(c, "ratio"), g(c, "cpu-ratio")
		}
		if ok(wall, cpu) && wall > 1.25 && cpu <= 1.25 {
			out = append(out, fmt.Sprintf("%s misses 1.25x in wall time (%.2fx) but not in CPU time (%.2fx): "+
				"the difference is time the agent's run spent waiting for the CPU on this shared machine.",
				strings.TrimPrefix(c, "Benchmark"), wall, cpu))
		}
	}
	if fr := g(churnGoBGP, "floor-events/s"); ok(fr) && fr < 5000 {
		out = append(out, fmt.Sprintf("The churn targets of 5,000 changes/s and a 5 ms p99 are out of reach of the "+
			"embedded GoBGP itself at this size: the floor, with no agent at all, makes %.0f changes/s.", fr))
		if mf := g(churnGoBGP, "max/floor"); ok(mf) && mf < 0.8 {
			out = append(out, fmt.Sprintf("But the agent, flooded, reached only %.2fx the floor's rate (the floor "+
				"replays the flood's own events from the same state), so this run does not show the agent to be "+
				"bounded by GoBGP: the rest of the gap is the agent's (see the profile).", mf))
		} else {
			out = append(out, "They are bounded by GoBGP's cost per change, not by the agent (see the agent alone, and the profile): "+
				"each change is a management operation that waits its turn on GoBGP's one event loop "+
				"(G `pkg/server/server.go` L268-282, `mgmtOperation`), and its soft reset walks the neighbor's "+
				"Adj-RIB-In, which v4.4 and later allocate as 2,048 shards per neighbor and family "+
				"(G `internal/pkg/table/table.go` L104-126) and which the GC scans with the rest of the 10,099 "+
				"neighbors' tables. A release with upstream PR #3663 (\"Reduce table memory\", merged, in no "+
				"release the module proxy serves: v4.8.0 is the newest) drops those shards: it should lower the heap "+
				"per neighbor, the soft reset's walk and the GC work behind the floor's p99; the floor's own rate "+
				"above is the bound to compare it with.")
		}
		if old := g(churnGoBGP, "old-events/s"); ok(old) && fr/old < 100 && !(ok(g(churnGoBGP, "max/floor")) && g(churnGoBGP, "max/floor") < 0.8) {
			out = append(out, fmt.Sprintf("So is the ratio to the old way: GoBGP's own rate is only %.0fx the old "+
				"way's, which spends most of its time re-deriving.", fr/old))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "**What bounds the unmet targets.** " + strings.Join(out, " ")
}

// ms shows milliseconds, as seconds from one second on.
func ms(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.1f s", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0f ms", v)
	}
	return fmt.Sprintf("%.2g ms", v)
}

// count shows a number with thousands separated: 10,099.
func count(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func secs(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.2f s", v)
	}
	return fmt.Sprintf("%.0f s", v)
}

// routeHeapText is the live heap a learned route costs, the agent's and
// the speaker's shares apart (the DaemonSet's memory formula).
func routeHeapText(g getter) string {
	agentB, speakerB, total := g(routeHeap, "agent-B/route"), g(routeHeap, "speaker-B/route"), g(routeHeap, "total-B/route")
	if !ok(agentB, speakerB, total) {
		return ""
	}
	return fmt.Sprintf("**Heap per learned route.** With 100,000 /32s learned from one GoBGP peer, each costs "+
		"%s B of live heap in all: %s B in the agent's State and %s B in the speaker (GoBGP's Adj-RIB-In and "+
		"RIB, and the executor's copy of the equal-best sets); the README's memory formula uses it, and "+
		"--max-prefixes bounds it per neighbor (docs/routes.md §9.9).", count(total), count(agentB), count(speakerB))
}

// scrapeText is the cost of one /metrics scrape with 100,000 learned
// routes: what anyone reaching --metrics-addr can make the agent pay.
func scrapeText(g getter) string {
	wall, cpu := g(scrape, "ns/op"), g(scrape, "cpu-ms/scrape")
	if !ok(wall, cpu) {
		return ""
	}
	return fmt.Sprintf("**Scrapes.** With 100,000 prefixes learned from one BGPPeer (the real loop over the real "+
		"GoBGP executor), one GET /metrics took %s and %s of CPU time, the speaker's goroutines included. The "+
		"route figures come from counts the loop keeps as each step changes the State, so a scrape costs "+
		"O(neighbors): it neither walks the routes nor asks the speaker to walk its Adj-RIBs (which cost about "+
		"0.7 CPU-seconds a scrape at this size, measured when the collector still did).", ms(wall/1e6), ms(cpu))
}
