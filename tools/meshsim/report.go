package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// report is every run of one invocation, for the table and the document.
type report struct {
	sizes      []int
	idle       time.Duration // the idle window
	settle     time.Duration
	runs       []runResult // in the order run: per size, per speaker
	loadBefore string
	loadAfter  string
	started    time.Time
	elapsed    time.Duration
}

// row is one line of the table: a label and each run's cell, with the
// numbers the ratio is taken from.
type row struct {
	label string
	cell  func(r runResult) (string, float64)
}

func median[T int64 | float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func spread[T int64 | float64 | time.Duration](xs []T, f func(T) string) string {
	if len(xs) == 0 {
		return "–"
	}
	return fmt.Sprintf("%s (%s–%s)", f(median(xs)), f(slices.Min(xs)), f(slices.Max(xs)))
}

func mib(b int64) string          { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
func cpus(d time.Duration) string { return fmt.Sprintf("%.3f CPU-s", d.Seconds()) }
func pct(f float64) string        { return fmt.Sprintf("%.2f%%", 100*f) }
func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func (rep report) rows() []row {
	return []row{
		{"RSS (VmRSS) after convergence and the idle window", func(r runResult) (string, float64) {
			return spread(r.rss, mib), float64(median(r.rss))
		}},
		{"of which anonymous (RssAnon: the process's own)", func(r runResult) (string, float64) {
			return spread(r.anon, mib), float64(median(r.anon))
		}},
		{"PSS (file pages shared by the N speakers divided among them)", func(r runResult) (string, float64) {
			return spread(r.pss, mib), float64(median(r.pss))
		}},
		{"CPU to converge (from the speaker's start)", func(r runResult) (string, float64) {
			return spread(r.cpuConverge, cpus), median(r.cpuConverge).Seconds()
		}},
		{"idle CPU (share of one core)", func(r runResult) (string, float64) {
			return spread(r.idleCPU, pct), median(r.idleCPU)
		}},
		{"whole mesh converged (from the first start)", func(r runResult) (string, float64) {
			return secs(r.converge), r.converge.Seconds()
		}},
		{"re-convergence after SIGKILL and restart of 20%", func(r runResult) (string, float64) {
			return fmt.Sprintf("%s (%d nodes: %v)", secs(r.reconverge), len(r.restarted), r.restarted), r.reconverge.Seconds()
		}},
		{"connects during it (TCP ActiveOpens, all nodes) / sessions restored", func(r runResult) (string, float64) {
			return fmt.Sprintf("%d / %d", r.tcp.ActiveOpens, r.sessions), float64(r.tcp.ActiveOpens)
		}},
		{"accepted connections closed at once (peers' logs)", func(r runResult) (string, float64) {
			v := r.logs["refused"] + r.logs["refused2"]
			return fmt.Sprint(v), float64(v)
		}},
		{"TCP AttemptFails / EstabResets during it", func(r runResult) (string, float64) {
			return fmt.Sprintf("%d / %d", r.tcp.AttemptFails, r.tcp.EstabResets), float64(r.tcp.AttemptFails + r.tcp.EstabResets)
		}},
		{"`restart flag is not set` (GoBGP's log)", func(r runResult) (string, float64) {
			v, ok := r.logs["restart flag"]
			if !ok {
				return "–", 0
			}
			return fmt.Sprint(v), float64(v)
		}},
		{"route changes seen by observers (added or replaced / deleted)", func(r runResult) (string, float64) {
			return fmt.Sprintf("%d / %d (nodes %v)", r.routeNew, r.routeDel, r.observers), float64(r.routeNew + r.routeDel)
		}},
	}
}

// markdown is a table per size: one column per speaker and, with two,
// the ratio of the first to the second; with several sizes, RSS fitted
// as a base plus a cost per neighbor; then the load.
func (rep report) markdown() string {
	var b strings.Builder
	for i := 0; i < len(rep.runs); {
		j := i
		for j < len(rep.runs) && rep.runs[j].n == rep.runs[i].n {
			j++
		}
		b.WriteString(table(rep.runs[i].n, rep.runs[i:j], rep.rows()))
		b.WriteString("\n")
		i = j
	}
	b.WriteString(rep.fit())
	fmt.Fprintf(&b, "Idle window %v after a settle time of %v. ", rep.idle, rep.settle)
	fmt.Fprintf(&b, "Load average %s (1, 5, 15 min) as the run began, %s as it ended; %v; %d CPUs; %s.\n",
		rep.loadBefore, rep.loadAfter, rep.elapsed.Round(time.Second), runtime.NumCPU(), runtime.Version())
	return b.String()
}

func table(n int, runs []runResult, rows []row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| per speaker, N = %d (median (min–max) over the nodes) |", n)
	for _, r := range runs {
		fmt.Fprintf(&b, " %s |", r.speaker)
	}
	ratios := ratioPairs(len(runs))
	for _, p := range ratios {
		if len(runs) == 2 {
			b.WriteString(" ratio |")
		} else {
			fmt.Fprintf(&b, " %s / %s |", runs[p[0]].speaker, runs[p[1]].speaker)
		}
	}
	b.WriteString("\n|---|")
	for range len(runs) + len(ratios) {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, rw := range rows {
		fmt.Fprintf(&b, "| %s |", rw.label)
		var v []float64
		for _, r := range runs {
			c, x := rw.cell(r)
			v = append(v, x)
			fmt.Fprintf(&b, " %s |", c)
		}
		for _, p := range ratios {
			if v[p[1]] != 0 {
				fmt.Fprintf(&b, " %.2gx |", v[p[0]]/v[p[1]])
			} else {
				b.WriteString(" – |")
			}
		}
		b.WriteString("\n")
	}
	for _, r := range runs {
		if len(r.routeSeen) > 0 {
			fmt.Fprintf(&b, "\n%s observers' first route messages: %s\n", r.speaker, strings.Join(r.routeSeen, "; "))
		}
	}
	return b.String()
}

// ratioPairs are the ratio columns of a table of n speakers, as indexes
// (numerator, denominator): with two, the first to the second; with more,
// each to the next (peeragent / GoBGP floor, GoBGP floor / BIRD 2) and the
// first to the last (peeragent / BIRD 2).
func ratioPairs(n int) [][2]int {
	var out [][2]int
	for i := 0; i+1 < n; i++ {
		out = append(out, [2]int{i, i + 1})
	}
	if n > 2 {
		out = append(out, [2]int{0, n - 1})
	}
	return out
}

// fit is, per speaker run at two sizes or more, the least-squares line
// through its (neighbors, median VmRSS) points, and through its (neighbors,
// median RssAnon) points: base + per neighbor.
func (rep report) fit() string {
	var b strings.Builder
	for _, m := range []struct {
		name string
		of   func(runResult) []int64
	}{{"RSS", func(r runResult) []int64 { return r.rss }}, {"RssAnon", func(r runResult) []int64 { return r.anon }}} {
		var names []string
		pts := map[string][][2]float64{}
		for _, r := range rep.runs {
			if _, ok := pts[r.speaker]; !ok {
				names = append(names, r.speaker)
			}
			pts[r.speaker] = append(pts[r.speaker], [2]float64{float64(r.n - 1), float64(median(m.of(r))) / (1 << 20)})
		}
		for _, name := range names {
			if base, slope, ok := line(pts[name]); ok {
				fmt.Fprintf(&b, "- %s %s, fitted over %d runs: %.1f MiB + %.3f MiB per neighbor\n", name, m.name, len(pts[name]), base, slope)
			}
		}
	}
	if b.Len() > 0 {
		return b.String() + "\n"
	}
	return ""
}

// line is the least-squares line through p: y = base + slope*x.
func line(p [][2]float64) (base, slope float64, ok bool) {
	var sx, sy, sxx, sxy float64
	for _, q := range p {
		sx, sy, sxx, sxy = sx+q[0], sy+q[1], sxx+q[0]*q[0], sxy+q[0]*q[1]
	}
	k := float64(len(p))
	den := k*sxx - sx*sx
	if len(p) < 2 || den == 0 {
		return 0, 0, false
	}
	slope = (k*sxy - sx*sy) / den
	return (sy - slope*sx) / k, slope, true
}

// sectionHeading starts the part of docs/performance.md that meshsim
// writes; tools/perfdoc keeps it as it is.
const sectionHeading = "## Mesh simulation beside BIRD (make mesh-sim)"

func (rep report) section() string {
	return sectionHeading + "\n\n" +
		"_Generated by `make mesh-sim N=" + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(rep.sizes)), ","), "[]") + "` (tools/meshsim); do not edit by hand._\n\n" +
		sectionMethod + "\n" + rep.markdown()
}

const sectionMethod = `N Kubernetes nodes on this machine: one network namespace per node, each with a veth
on one bridge (in a namespace of its own), an address in 10.200.0.0/24, a permanent
neighbor entry for every other node (the kernel's neighbor table is shared by all
namespaces and garbage-collected past gc_thresh3; permanent entries do not count), and a
/26 pod block of 10.244.0.0/16. Every node runs the same speaker, in the node-to-node
mesh (AS 64512, the side whose peer's address text sorts higher is passive, as Calico
does): once **peeragent** (` + "`run --from DIR --dataplane linux`" + `, a manifest directory
written for the node: the default BGPConfiguration, the IPPool, every Node and
BlockAffinity), once **BIRD 2** with calico-node's configuration (bird.cfg, bird_aggr.cfg
and bird_ipam.cfg as confd's templates render them for a mesh without encapsulation, at
the default log level; ` + "`bird -R -s SOCK -d -c bird.cfg`" + `, as calico-node runs it; calico-node
ships a BIRD 1.6 fork, so import, export, gateway and add paths move into the ipv4 channel,
BIRD 2's syntax, and nothing else changes). With ` + "`-speakers peeragent,gobgp,bird`" + ` a column
between them is the **GoBGP floor** (tools/meshsim/floor): the agent's GoBGP v4.8.0 alone,
configured as the agent configures the mesh (the same global config, shared export policy
and sets, own path and AddPeer requests, from effects/gobgp), putting its best paths into
the kernel by netlink, and nothing else; ` + "`gobgp-nolimit`" + ` is it without prefix limit. With
three speakers or more, each column's ratio to the next and the first's to the last.

- *Converged*: every namespace has an ESTABLISHED TCP connection on port 179 with every
  other node and a route through it to every other block in its kernel (polled every
  100 ms through netlink, which costs the speakers nothing), and then every speaker
  reports every mesh session Established (peeragent's /metrics, uncompressed, BIRD's control
  socket, the floor's /established).
- *CPU to converge*: the speaker process's CPU time (the sum of its threads' schedstat)
  from its start until then. *Idle CPU*: over the idle window after a settle time, with
  nothing polled. *RSS*: at the end of the idle window, VmRSS (every page the process
  maps: its own, and the file pages of its binary and libraries, which the page cache
  holds once for every process of the machine and can reclaim), RssAnon (/proc/PID/status:
  the process's own, heap, stacks and written data) and PSS (/proc/PID/smaps_rollup: each
  page divided by the number of processes that map it, so here the binary's pages are
  shared by the N speakers, where a real node runs one).
- *Re-convergence*: 20% of the nodes (spread over the address order) are killed with
  SIGKILL and started again at once; the time from the kill until every node is converged
  again (as above, without the route condition: the routes stay through graceful
  restart). *Connects*: the TCP connections the namespaces opened meanwhile
  (/proc/net/snmp ActiveOpens, summed), against the sessions the restart broke.
  *Accepted connections closed*: GoBGP's ` + "`Closed an accepted connection`" + ` and
  ` + "`accepted conn is closed`" + ` (with the agent log limiter's suppressed counts), BIRD's
  ` + "`Incoming connection ... rejected`" + `.
- *Route changes*: rtnetlink route messages of the main table in observer nodes that are
  not restarted, from before the kill until a settle time after re-convergence.
`

// writeDoc replaces the section in the document at path (from its heading
// to the next "## " heading), or appends it.
func writeDoc(path, section string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	doc := string(old)
	section = strings.TrimRight(section, "\n") + "\n"
	if i := strings.Index(doc, sectionHeading); i >= 0 {
		rest := doc[i+len(sectionHeading):]
		end := ""
		if j := strings.Index(rest, "\n## "); j >= 0 {
			end = "\n" + rest[j+1:]
		}
		doc = doc[:i] + section + end
	} else {
		doc = strings.TrimRight(doc, "\n") + "\n\n" + section
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}
