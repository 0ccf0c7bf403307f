package watch

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// aliasBomb is the ConfigMap that once killed the agent: a mapping of 100 anchored 10 KB
// strings, aliased 1,000 times: 1 MB of text standing for 1 GB of strings
// (past 4 GB once converted to JSON and decoded); 5,000 plain scalars keep
// the share of aliased nodes under the 99% go-yaml's alias-ratio check allows.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n  big: &big\n")
	s := strings.Repeat("x", 10_000)
	for i := range 100 {
		fmt.Fprintf(&b, "    k%d: &s%d %s\n", i, i, s)
	}
	b.WriteString("  plain: [" + strings.Repeat("y, ", 5000) + "y]\n  many:\n")
	for range 1000 {
		b.WriteString("  - *big\n")
	}
	return b.String()
}

// TestAliasBombBounded: the alias file is a problem on its file, the peer
// beside it still loads, and decoding it allocates well under 100 MB (it
// used to run out of memory past 4 GB).
func TestAliasBombBounded(t *testing.T) {
	dir := t.TempDir()
	writeManifests(t, dir, map[string]string{
		"bomb.yaml": aliasBomb(),
		"peer.yaml": manifestPeer("projectcalico.org/v3", "tor-a", "65001"),
	})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	objs, probs := LoadDir(dir)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("alias file: %d bytes of text; LoadDir allocated %.1f MB in all; %s", len(aliasBomb()), float64(alloc)/1e6, vmHWM())
	if alloc > 100<<20 {
		t.Errorf("LoadDir allocated %d MB, want under 100 MB", alloc>>20)
	}
	if len(objs.Peers) != 1 {
		t.Errorf("peers = %v, want tor-a", objs.Peers)
	}
	if len(probs) != 1 || probs[0].Object != "file/bomb.yaml" || !strings.Contains(probs[0].Reason, "aliases expand") {
		t.Errorf("problems = %v, want one on file/bomb.yaml about aliases", probs)
	}
}

// TestAliasesWithinBoundsLoad: ordinary anchors and aliases still work.
func TestAliasesWithinBoundsLoad(t *testing.T) {
	dir := t.TempDir()
	writeManifests(t, dir, map[string]string{"p.yaml": `apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: tor-a, labels: &l {rack: a}, annotations: *l}
spec: {peerIP: 192.0.2.1, asNumber: 65001}
`})
	objs, probs := LoadDir(dir)
	if len(objs.Peers) != 1 || len(probs) != 0 {
		t.Errorf("got %v, %v; want tor-a and no problem", objs.Peers, probs)
	}
}

// vmHWM is the process's peak resident set, for the log.
func vmHWM() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return "process peak RSS " + strings.Join(strings.Fields(l)[1:], " ")
		}
	}
	return ""
}
