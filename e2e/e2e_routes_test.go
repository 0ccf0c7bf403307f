package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// checkRoutesCLI runs the peeragent binary's routes and status commands in
// agent a's namespace (node-a of the ping rig, its routes installed): the
// learned block via node-b, from node-b, applied; its own block's drop
// route; node-b's route counts; and the per-neighbor series cap's gauge.
func checkRoutesCLI(t *testing.T, ctx context.Context, bin string, a *nsAgent) {
	cli := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", a.ns, bin}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("peeragent %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	text := cli("routes")
	t.Logf("peeragent routes (node-a):\n%s", text)
	var learned, own string
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, pingBlkB+" "):
			learned = l
		case strings.HasPrefix(l, pingBlkA+" "):
			own = l
		}
	}
	if f := strings.Fields(learned); len(f) < 6 || f[1] != "via" || f[2] != pingAddrB || f[3] != pingAddrB || f[4] != "learned" || f[5] != "applied" {
		t.Errorf("routes: node-b's block %q: want via %s, learned from %s, origin learned, applied", learned, pingAddrB, pingAddrB)
	}
	if f := strings.Fields(own); len(f) < 5 || f[1] != "drop" || f[2] != "-" || !strings.HasPrefix(f[3], "blockaffinity/") || f[4] != "applied" {
		t.Errorf("routes: own block %q: want drop, from no neighbor, its affinity, applied", own)
	}
	var rs []state.RouteView
	if err := json.Unmarshal([]byte(cli("routes", "-o", "json")), &rs); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rs {
		if r.TableRoute != nil && r.Prefix.String() == pingBlkB {
			found = len(r.Paths) == 1 && r.Paths[0].Neighbor.String() == pingAddrB && r.Installed()
		}
	}
	if !found {
		t.Errorf("routes -o json: no installed %s from %s in %+v", pingBlkB, pingAddrB, rs)
	}
	detail := cli("status", pingAddrB)
	t.Logf("peeragent status %s (node-a):\n%s", pingAddrB, detail)
	if !strings.Contains(detail, "installed 1, refused 0") {
		t.Errorf("status %s lacks its route counts (installed 1, refused 0)", pingAddrB)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pingHTTP+"/metrics", nil)
	resp, err := a.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "\npeeragent_neighbor_series_omitted 0\n") {
		t.Errorf("/metrics lacks peeragent_neighbor_series_omitted 0 (one mesh neighbor, never broken out)")
	}
}
