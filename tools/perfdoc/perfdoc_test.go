package main

import (
	"math"
	"strings"
	"testing"
)

const sampleOutput = `goos: linux
pkg: github.com/peeragent/peeragent/e2e
BenchmarkConvergence/mesh=1000-2  1  900000000 ns/op  0.9 agent-s  1.10 agent/floor  999 neighbors
BenchmarkConvergence/mesh=1000-2  1  800000000 ns/op  0.8 agent-s  1.30 agent/floor  999 neighbors
BenchmarkConvergence/mesh=1000-2  1  700000000 ns/op  0.7 agent-s  1.20 agent/floor  999 neighbors
BenchmarkMemory/state-2           1  0 ns/op  1700 B/neighbor  10099 neighbors
--- BENCH: BenchmarkX
PASS
`

func TestParseBenchTakesMedians(t *testing.T) {
	r, err := parseBench(strings.NewReader(sampleOutput))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := r.median(convMesh, "agent/floor"); v != 1.20 {
		t.Errorf("median agent/floor = %v, want 1.20", v)
	}
	if r.runs(convMesh) != 3 {
		t.Errorf("runs = %d, want 3", r.runs(convMesh))
	}
	if _, ok := r.median(convPeers, "agent/floor"); ok {
		t.Error("a benchmark that did not run has a median")
	}
}

func TestScorecardSaysWhatIsMet(t *testing.T) {
	r, _ := parseBench(strings.NewReader(sampleOutput))
	card, met, total := scorecard(r)
	if met != 2 || total != 2 {
		t.Errorf("met %d of %d, want 2 of 2:\n%s", met, total, card)
	}
	if !strings.Contains(card, "| convergence of 10,000 BGPPeers within 1.25x of the GoBGP floor | not run | - |") {
		t.Errorf("a target that did not run is not shown as such:\n%s", card)
	}
}

const learnedOutput = `BenchmarkLearnedInstall/routes=1000-2    1  1 ns/op  0.02 agent-s  0.002 core-s  0.01 floor-s  500 heap-B/route  2.0 ratio  1.5 cpu-ratio  0.001 results-s
BenchmarkLearnedInstall/routes=100000-2  1  1 ns/op  1.7 agent-s  0.3 core-s  1.5 floor-s  496 heap-B/route  1.13 ratio  1.05 cpu-ratio  0.1 results-s  1.2 ratio-with-results
BenchmarkLearnedInstall/routes=100000-2  1  1 ns/op  2.0 agent-s  0.3 core-s  1.5 floor-s  496 heap-B/route  1.40 ratio  1.10 cpu-ratio  0.1 results-s  1.5 ratio-with-results
BenchmarkLearnedInstall/routes=100000-2  1  1 ns/op  1.8 agent-s  0.3 core-s  1.5 floor-s  496 heap-B/route  1.20 ratio  1.07 cpu-ratio  0.1 results-s  1.3 ratio-with-results
BenchmarkBestPathChange-2  2000  20000 ns/op  0.01 p50-ms  0.04 p99-ms
`

func TestLearnedRoutes(t *testing.T) {
	r, _ := parseBench(strings.NewReader(learnedOutput))
	card, met, total := scorecard(r)
	if met != 3 || total != 3 {
		t.Errorf("met %d of %d, want 3 of 3 (ratio 1.20x, heap 496 B, p99 0.04 ms):\n%s", met, total, card)
	}
	g := func(name, unit string) float64 {
		if v, ok := r.median(name, unit); ok {
			return v
		}
		return math.NaN()
	}
	text := learnedText(g)
	for _, want := range []string{"1.20x in wall time, 1.07x in CPU time", "| 100,000 | 1.500 | 1.800 | 0.300 | 0.100 | 1.20x | 1.07x | 496 |",
		"| 1,000 | 0.010 | 0.020 | 0.002 | 0.001 | 2.00x | 1.50x | 500 |", "0.04 ms at p99"} {
		if !strings.Contains(text, want) {
			t.Errorf("learned text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "| 10,000 |") {
		t.Errorf("a size that did not run has a row:\n%s", text)
	}
}

func TestScrapeTarget(t *testing.T) {
	r, _ := parseBench(strings.NewReader("BenchmarkScrape/routes=100000-2  20  2789132 ns/op  1.009 cpu-ms/scrape\n"))
	card, met, total := scorecard(r)
	if met != 1 || total != 1 || !strings.Contains(card, "| a /metrics scrape at 100,000 learned routes within 10 ms | 2.8 ms | yes |") {
		t.Errorf("met %d of %d, want the scrape target met at 2.8 ms:\n%s", met, total, card)
	}
	r, _ = parseBench(strings.NewReader("BenchmarkScrape/routes=100000-2  10  3592503160 ns/op  698.3 cpu-ms/scrape\n"))
	if card, met, _ := scorecard(r); met != 0 {
		t.Errorf("a 3.6 s scrape counts as met:\n%s", card)
	}
}

func TestKeptPartStartsAtTheFirstKeptHeading(t *testing.T) {
	doc := "# Performance\n\n## Result\n\nx\n\n## Mesh simulation beside BIRD (make mesh-sim)\n\nm\n\n## GoBGP releases side by side (floor, no agent)\n\ng\n"
	if got, want := keptPart(doc), "\n## Mesh simulation beside BIRD (make mesh-sim)\n\nm\n\n## GoBGP releases side by side (floor, no agent)\n\ng\n"; got != want {
		t.Errorf("keptPart = %q, want %q", got, want)
	}
	if got := keptPart("# Performance\n\n## Result\n"); got != "" {
		t.Errorf("keptPart of a document without kept parts = %q, want empty", got)
	}
	only := "# P\n\n## GoBGP releases side by side\n\ng\n"
	if got := keptPart(only); got != "\n## GoBGP releases side by side\n\ng\n" {
		t.Errorf("keptPart = %q", got)
	}
}
