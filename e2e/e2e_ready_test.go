package e2e

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/state"
)

// TestReadyzWhenKernelRefusesRoutes (docs/routes.md §9.7 rule 7): the real
// agent with --dataplane linux in a network namespace of the test's own,
// run without CAP_NET_ADMIN (setpriv drops it from the bounding and
// inheritable sets), so the kernel refuses its block's blackhole. /readyz
// says 503 and why, the problem is in /state, and /healthz stays 200.
// The same agent with the capability is ready (TestRescanRepairsKernelRoutes).
func TestReadyzWhenKernelRefusesRoutes(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		netnsDep.Missing(t, "!!! NO setpriv (util-linux): the readiness test drops CAP_NET_ADMIN with it.")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := nodeNS(t, ctx, "y")
	dir := pingManifests(t, false)
	a := startNSAgentVia(t, []string{"setpriv", "--bounding-set", "-net_admin", "--inh-caps", "-net_admin"},
		buildAgent(t), ns, dir, "node-a", pingAddrA, "--route-settle-max", "1s")

	get := func(path string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pingHTTP+path, nil)
		resp, err := a.client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var code int
	var body string
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body = get("/readyz")
		if code == http.StatusServiceUnavailable && strings.Contains(body, "dataplane down: the kernel refuses") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz %d %q, want 503 with the kernel's refusal\n%s", code, body, a.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("/readyz: %d %s", code, strings.TrimSpace(body))
	if !strings.Contains(body, "operation not permitted") || !strings.Contains(body, "CAP_NET_ADMIN") {
		t.Errorf("/readyz %q: want the kernel's error and the capability it needs", body)
	}
	if c, b := get("/healthz"); c != http.StatusOK {
		t.Errorf("/healthz %d %q, want 200: a restart cures nothing here", c, b)
	}
	d := a.state(t, ctx)
	var blk *state.TableRoute
	for _, r := range d.Routes {
		if r.Prefix.String() == pingBlkA {
			blk = r
		}
	}
	if blk == nil || blk.Phase != state.RoutePhaseFailed || !strings.Contains(blk.LastError, "operation not permitted") {
		t.Errorf("route %s in /state: %+v, want failed with the kernel's error", pingBlkA, blk)
	}
}
