package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var updatePlan = flag.Bool("update", false, "rewrite testdata/plan-lab-node-a.json")

// TestPlanLab pins `peeragent plan --from examples/lab --node node-a -o json`:
// its JSON is a stable interface.
func TestPlanLab(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"plan", "--from", "../../examples/lab", "--node", "node-a", "-o", "json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	const path = "testdata/plan-lab-node-a.json"
	if *updatePlan {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), out.String()); d != "" {
		t.Errorf("plan differs (-want +got):\n%s", d)
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"node", "routerID", "asn", "neighbors", "effects", "problems", "advertised", "routes"} {
		if _, ok := p[k]; !ok {
			t.Errorf("plan JSON lacks %q", k)
		}
	}
	if strings.Contains(out.String(), "lab-only-password") {
		t.Error("plan shows the password text")
	}
}

// TestPlanLearned: --learned feeds best paths to the plan's route table,
// sorted by prefix beside the own-block drop route (docs/routes.md §9).
func TestPlanLearned(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"plan", "--from", "../../examples/lab", "--node", "node-a", "-o", "json", "--learned", "testdata/learned-lab.yaml"}
	if code := Main(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var p struct {
		Routes []PlanRoute `json:"routes"`
	}
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	want := []PlanRoute{
		{Prefix: "10.244.1.0/26", Drop: true, Via: []string{}, Origin: "blockaffinity/node-a-10-244-1-0-26"},
		{Prefix: "10.244.2.0/26", Via: []string{"127.0.0.2"}, Origin: "learned"},
		{Prefix: "10.244.3.0/26", Via: []string{"127.0.0.3", "127.0.0.10"}, Origin: "learned"},
	}
	if d := cmp.Diff(want, p.Routes); d != "" {
		t.Errorf("routes (-want +got):\n%s", d)
	}
	errb.Reset()
	bad := t.TempDir() + "/bad.yaml"
	if err := os.WriteFile(bad, []byte("- prefix: 10.0.0.0/8\n  nextHop: 10.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := Main([]string{"plan", "--from", "../../examples/lab", "--node", "node-a", "--learned", bad}, &out, &errb); code == 0 || !strings.Contains(errb.String(), "--learned") {
		t.Errorf("a misspelt --learned field: exit %d, %q", code, errb.String())
	}
}

func TestPlanText(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"plan", "--from", "../../examples/lab", "--node", "node-b"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"node node-b: AS 64512", "127.0.0.1", "start-server", "problems (0)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text plan lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCommandErrors(t *testing.T) {
	checkMain(t, []mainCase{
		{"no-command", nil, 2, "Usage:"},
		{"unknown-command", []string{"frobnicate"}, 2, "unknown command"},
		{"plan-without-node", []string{"plan", "--from", "../../examples/lab", "--node", ""}, 1, "--node (or $NODENAME) is required"},
		{"plan-bad-format", []string{"plan", "--from", "../../examples/lab", "--node", "node-a", "-o", "xml"}, 1, "want text or json"},
		{"run-without-node", []string{"run", "--from", "../../examples/lab", "--node", ""}, 1, "--node"},
		{"status-nobody-listening", []string{"status", "--addr", "127.0.0.1:1"}, 1, "read /state from"},
		{"help", []string{"--help"}, 0, "peeragent plan"},
	})
}

// mainCase is one run of Main: its arguments, the exit code it must end
// with and a text its output (standard output and error) must hold.
type mainCase struct {
	name string
	args []string
	code int
	want string
}

// checkMain runs each case through Main, as a subtest.
func checkMain(t *testing.T, cases []mainCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(c.args, &out, &errb)
			if code != c.code || !strings.Contains(out.String()+errb.String(), c.want) {
				t.Errorf("Main(%q) = %d, output %q; want %d and %q", c.args, code, out.String()+errb.String(), c.code, c.want)
			}
		})
	}
}
