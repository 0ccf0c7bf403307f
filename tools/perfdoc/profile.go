package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The profile of the 10,000-BGPPeer run (make bench writes it) is read
// through `go tool pprof -raw`: every sample with its stack and its run
// label (agent or floor; none for GC background workers).

// agentCode matches the agent's own functions: the core, the executors and
// the loop, not the benchmark's harness.
var agentCode = regexp.MustCompile(`^github\.com/peeragent/peeragent/(agent|reducer|effects|state|selector)[./]`)

const gobgpCode = "github.com/osrg/gobgp/"

// Categories of CPU samples.
const (
	catAgent   = "agent's own code"
	catGoBGP   = "GoBGP"
	catRuntime = "Go runtime and other"
)

// profileStats are CPU seconds by run label and category, and by agent
// function (cumulative: samples with the function anywhere on the stack)
// within the agent's run.
type profileStats struct {
	byRun     map[string]map[string]float64
	agentFunc map[string]float64
}

func readProfile(path string) (profileStats, error) {
	raw, err := exec.Command("go", "tool", "pprof", "-raw", path).Output()
	if err != nil {
		return profileStats{}, fmt.Errorf("go tool pprof -raw %s: %w", path, err)
	}
	samples, locs := splitRaw(raw)
	st := profileStats{byRun: map[string]map[string]float64{}, agentFunc: map[string]float64{}}
	for _, s := range samples {
		st.add(s, locs)
	}
	return st, nil
}

// sample is one stack's CPU seconds, its location ids and its run label.
type sample struct {
	secs float64
	ids  []int
	run  string
}

func (st *profileStats) add(s sample, locs map[int][]string) {
	cat, seen := catRuntime, map[string]bool{}
	for _, id := range s.ids {
		for _, fn := range locs[id] {
			switch {
			case agentCode.MatchString(fn):
				cat = catAgent
				if s.run == "agent" && !seen[fn] {
					st.agentFunc[fn] += s.secs
				}
			case strings.HasPrefix(fn, gobgpCode) && cat == catRuntime:
				cat = catGoBGP
			}
			seen[fn] = true
		}
	}
	run := s.run
	if run == "" {
		run = "unlabelled (GC background, setup)"
	}
	if st.byRun[run] == nil {
		st.byRun[run] = map[string]float64{}
	}
	st.byRun[run][cat] += s.secs
}

var (
	sampleLine = regexp.MustCompile(`^\s+\d+\s+(\d+): ([\d ]+)$`)
	labelLine  = regexp.MustCompile(`^\s+run:\[(\w+)\]`)
	locLine    = regexp.MustCompile(`^\s+(\d+): 0x[0-9a-f]+ M=\d+ (\S+) `)
	inlineLine = regexp.MustCompile(`^\s{6,}(\S+) \S+:\d+`)
)

// splitRaw parses pprof's raw text: samples (nanoseconds, location ids,
// run label) and, per location id, its functions (inlined ones included).
func splitRaw(raw []byte) ([]sample, map[int][]string) {
	var samples []sample
	locs := map[int][]string{}
	inLocs, cur := false, 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Locations"):
			inLocs = true
		case strings.HasPrefix(line, "Mappings"):
			inLocs = false
		case !inLocs:
			if m := sampleLine.FindStringSubmatch(line); m != nil {
				ns, _ := strconv.ParseFloat(m[1], 64)
				samples = append(samples, sample{secs: ns / 1e9, ids: ints(m[2])})
			} else if m := labelLine.FindStringSubmatch(line); m != nil && len(samples) > 0 {
				samples[len(samples)-1].run = m[1]
			}
		default:
			if m := locLine.FindStringSubmatch(line); m != nil {
				cur, _ = strconv.Atoi(m[1])
				locs[cur] = append(locs[cur], m[2])
			} else if m := inlineLine.FindStringSubmatch(line); m != nil {
				locs[cur] = append(locs[cur], m[1])
			}
		}
	}
	return samples, locs
}

func ints(s string) []int {
	var out []int
	for _, f := range strings.Fields(s) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

// markdown renders the shares by run, and the agent's heaviest functions.
func (st profileStats) markdown() string {
	var b strings.Builder
	b.WriteString("| run | CPU s | " + catAgent + " | " + catGoBGP + " | " + catRuntime + " |\n|---|---|---|---|---|\n")
	runs := make([]string, 0, len(st.byRun))
	for r := range st.byRun {
		runs = append(runs, r)
	}
	sort.Strings(runs)
	for _, r := range runs {
		c := st.byRun[r]
		total := c[catAgent] + c[catGoBGP] + c[catRuntime]
		fmt.Fprintf(&b, "| %s | %.1f | %s | %s | %s |\n", r, total,
			share(c[catAgent], total), share(c[catGoBGP], total), share(c[catRuntime], total))
	}
	b.WriteString("\nThe agent's heaviest functions in its run (CPU seconds with the function on the stack):\n\n")
	type fs struct {
		name string
		secs float64
	}
	var top []fs
	for n, s := range st.agentFunc {
		top = append(top, fs{n, s})
	}
	sort.Slice(top, func(i, j int) bool {
		return top[i].secs > top[j].secs || (top[i].secs == top[j].secs && top[i].name < top[j].name)
	})
	for i := 0; i < len(top) && i < 12; i++ {
		fmt.Fprintf(&b, "- %.2f s `%s`\n", top[i].secs, strings.TrimPrefix(top[i].name, "github.com/peeragent/peeragent/"))
	}
	return b.String()
}

func share(v, total float64) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f s (%.0f%%)", v, 100*v/total)
}
