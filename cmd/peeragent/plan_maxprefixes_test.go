package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanMaxPrefixesAnnotation: `plan` reads a BGPPeer manifest's
// peeragent.io/max-prefixes annotation (docs/routes.md §9.9) and shows the
// limit as the neighbor's maxPrefixes and in its add-peer line; an invalid
// one is a problem naming the BGPPeer and the annotation, and the neighbor
// keeps --max-prefixes.
func TestPlanMaxPrefixesAnnotation(t *testing.T) {
	cases := []struct {
		name, value, flag string
		want              uint32
		effect, problem   string
	}{
		{name: "annotation-below-the-flag", value: "500", want: 500, effect: "max-prefixes=500"},
		{name: "annotation-above-the-flag", value: "50000", flag: "1000", want: 50000, effect: "max-prefixes=50000"},
		{name: "invalid-keeps-the-flag", value: "0", flag: "1000", want: 1000, effect: "max-prefixes=1000",
			problem: `bgppeer/tor: annotation peeragent.io/max-prefixes "0" is not a whole number`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "nodes.yaml", `apiVersion: v1
kind: Node
metadata:
  name: node-a
  annotations: {projectcalico.org/IPv4Address: 10.0.0.1/24}
`)
			writeFile(t, dir, "bgp.yaml", fmt.Sprintf(`apiVersion: crd.projectcalico.org/v1
kind: BGPConfiguration
metadata: {name: default}
spec: {asNumber: 64512}
---
apiVersion: crd.projectcalico.org/v1
kind: BGPPeer
metadata:
  name: tor
  annotations: {peeragent.io/max-prefixes: %q}
spec: {peerIP: 192.0.2.1, asNumber: 65001}
`, tc.value))
			args := []string{"plan", "--from", filepath.Clean(dir), "--node", "node-a", "-o", "json"}
			if tc.flag != "" {
				args = append(args, "--max-prefixes", tc.flag)
			}
			var out, errb bytes.Buffer
			if code := Main(args, &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			var p Plan
			if err := json.Unmarshal(out.Bytes(), &p); err != nil {
				t.Fatal(err)
			}
			if len(p.Neighbors) != 1 || p.Neighbors[0].MaxPrefixes != tc.want {
				t.Errorf("neighbors %+v, want one with maxPrefixes %d", p.Neighbors, tc.want)
			}
			if !strings.Contains(strings.Join(p.Effects, "\n"), tc.effect) {
				t.Errorf("effects %q lack %q", p.Effects, tc.effect)
			}
			var probs []string
			for _, pr := range p.Problems {
				probs = append(probs, pr.Object+": "+pr.Reason)
			}
			if got := strings.Join(probs, "; "); tc.problem == "" && got != "" || !strings.HasPrefix(got, tc.problem) {
				t.Errorf("problems %q, want %q", got, tc.problem)
			}
		})
	}
}

func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
