package main

import (
	"strings"
	"testing"
)

const sampleOutput = `goos: linux
pkg: github.com/peeragent/peeragent/cmd/peeragent
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
