package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestPlanFailOnProblems(t *testing.T) {
	plan := func(args ...string) []string {
		return append([]string{"plan", "--from", "../../examples/lab"}, args...)
	}
	checkMain(t, []mainCase{
		{"clean", plan("--node", "node-a", "--fail-on-problems"), 0, "problems (0)"},
		{"clean-without-flag", plan("--node", "nosuch"), 0, "node/nosuch: no Node of this name"},
		{"unknown-node", plan("--node", "nosuch", "--fail-on-problems"), 1, "1 problems (--fail-on-problems)"},
	})
}

// TestPlanTextHasNoGenerations: generation counters are bookkeeping, left
// out of the text; the JSON (a stable interface) keeps the effect strings.
func TestPlanTextHasNoGenerations(t *testing.T) {
	var text, js, errb bytes.Buffer
	if Main([]string{"plan", "--from", "../../examples/lab", "--node", "node-a"}, &text, &errb) != 0 ||
		Main([]string{"plan", "--from", "../../examples/lab", "--node", "node-a", "-o", "json"}, &js, &errb) != 0 {
		t.Fatal(errb.String())
	}
	if strings.Contains(text.String(), "gen=") || !strings.Contains(text.String(), "add-peer 127.0.0.2 as=64512") {
		t.Errorf("text plan:\n%s", text.String())
	}
	if !strings.Contains(js.String(), "gen=") {
		t.Error("the JSON plan lost its effect strings' generations")
	}
	if got := withoutGen("update-peer 10.0.0.2 gen=12 in-place: x"); got != "update-peer 10.0.0.2 in-place: x" {
		t.Errorf("withoutGen = %q", got)
	}
}
