package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestPlanFailOnProblems(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"clean", []string{"--node", "node-a", "--fail-on-problems"}, 0, "problems (0)"},
		{"clean-without-flag", []string{"--node", "nosuch"}, 0, "node/nosuch: no Node of this name"},
		{"unknown-node", []string{"--node", "nosuch", "--fail-on-problems"}, 1, "1 problems (--fail-on-problems)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(append([]string{"plan", "--from", "../../examples/lab"}, c.args...), &out, &errb)
			if code != c.code || !strings.Contains(out.String()+errb.String(), c.want) {
				t.Errorf("exit %d, want %d; output lacks %q?\n%s%s", code, c.code, c.want, out.String(), errb.String())
			}
		})
	}
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
