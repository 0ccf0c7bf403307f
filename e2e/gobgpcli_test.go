package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/state"
)

// gobgpVersion is the GoBGP release go.mod pins: its gobgp CLI must work
// against the embedded speaker's API.
const gobgpVersion = "v4.8.0"

const gobgpCLIPeer = `apiVersion: crd.projectcalico.org/v1
kind: BGPPeer
metadata: {name: tor}
spec: {node: node-a, peerIP: 127.0.0.2, asNumber: 64512}
`

const gobgpCLIConfig = `apiVersion: crd.projectcalico.org/v1
kind: BGPConfiguration
metadata: {name: default}
spec: {listenPort: %d}
`

func buildGoBGPCLI(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/osrg/gobgp/v4").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != gobgpVersion {
		t.Fatalf("go.mod's GoBGP is %q (%v), the test expects %s", out, err, gobgpVersion)
	}
	bin := filepath.Join(t.TempDir(), "gobgp")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/osrg/gobgp/v4/cmd/gobgp").CombinedOutput(); err != nil {
		t.Fatalf("go build gobgp: %v\n%s", err, out)
	}
	return bin
}

// gobgpCLI runs the gobgp CLI against the API at host:port.
func gobgpCLI(t *testing.T, bin, api string, args ...string) (string, error) {
	t.Helper()
	host, port, _ := net.SplitHostPort(api)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append([]string{"-u", host, "-p", port}, args...)...).CombinedOutput()
	return string(out), err
}

// waitCLI runs the gobgp CLI until its output has every one of want.
func waitCLI(t *testing.T, bin, api string, args []string, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		out, err := gobgpCLI(t, bin, api, args...)
		ok := err == nil
		for _, w := range want {
			ok = ok && strings.Contains(out, w)
		}
		if ok {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("gobgp %s: %v, output lacks %q:\n%s", strings.Join(args, " "), err, want, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestGoBGPCLIAgainstAgent: with --gobgp-api, the gobgp CLI of the pinned
// release reads the embedded speaker (gobgp neighbor, gobgp global rib);
// the same session shows in status ADDRESS and in the metrics address's
// per-neighbor series. Node-a peers with node-b through a BGPPeer (a
// neighbor with series of its own), node-b with node-a through the mesh;
// node-b originates a path through its own API.
func TestGoBGPCLIAgainstAgent(t *testing.T) {
	requireAddr(t, "127.0.0.2")
	bin, cli := buildAgent(t), buildGoBGPCLI(t)
	dir := t.TempDir()
	writeFile(t, dir, "nodes.yaml", e2eNodes)
	writeFile(t, dir, "bgp.yaml", fmt.Sprintf(gobgpCLIConfig, freeBGPPort(t)))
	writeFile(t, dir, "peer.yaml", gobgpCLIPeer)
	apiA, apiB, metricsA := freeAddr(t, "127.0.0.1"), freeAddr(t, "127.0.0.2"), freeAddr(t, "127.0.0.1")
	a := startAgent(t, bin, dir, "node-a", "127.0.0.1", "--gobgp-api", apiA, "--metrics-addr", metricsA, "--log-level", "info")
	b := startAgent(t, bin, dir, "node-b", "127.0.0.2", "--gobgp-api", apiB)
	waitEstablished(t, a, "127.0.0.2")
	waitEstablished(t, b, "127.0.0.1")

	if out, err := gobgpCLI(t, cli, apiB, "global", "rib", "add", "10.99.0.0/24", "-a", "ipv4"); err != nil {
		t.Fatalf("gobgp global rib add on node-b: %v\n%s", err, out)
	}
	neighbor := waitCLI(t, cli, apiA, []string{"neighbor"}, "127.0.0.2", "64512", "Establ")
	t.Logf("gobgp -p %s neighbor (node-a):\n%s", portOf(apiA), neighbor)
	rib := waitCLI(t, cli, apiA, []string{"global", "rib"}, "10.99.0.0/24", "127.0.0.2")
	t.Logf("gobgp -p %s global rib (node-a):\n%s", portOf(apiA), rib)
	detail := waitCLI(t, cli, apiA, []string{"neighbor", "127.0.0.2"}, "BGP state = SESSION_STATE_ESTABLISHED", "Received:")
	t.Logf("gobgp neighbor 127.0.0.2 (node-a):\n%s", detail)

	code, out, errb := runAgentCmd(t, bin, nil, "status", "--addr", a.http, "127.0.0.2")
	if code != 0 {
		t.Fatalf("status 127.0.0.2: exit %d: %s", code, errb)
	}
	for _, want := range []string{"origin bgppeer/tor", "speaker       established", "received 1, accepted 1, advertised 0",
		"remote: ", "four-octet-asn"} {
		if !strings.Contains(out, want) {
			t.Errorf("status 127.0.0.2 lacks %q:\n%s", want, out)
		}
	}
	t.Logf("peeragent status 127.0.0.2 (node-a):\n%s", out)

	learned := `peeragent_neighbor_learned_routes{neighbor="127.0.0.2",origin="bgppeer/tor"} 1`
	scrape := metricsText(t, metricsA)
	for end := time.Now().Add(10 * time.Second); !strings.Contains(scrape, learned) && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond) // the best path reaches the agent's State just after the speaker's RIB
		scrape = metricsText(t, metricsA)
	}
	for _, want := range []string{
		`peeragent_neighbor_session_state{neighbor="127.0.0.2",origin="bgppeer/tor",state="established"} 1`,
		learned, `peeragent_learned_routes{group="peer"} 1`,
		`peeragent_sessions{group="peer",state="established"} 1`,
		`peeragent_build_info{goversion="`, "go_goroutines ", "process_resident_memory_bytes ",
		`peeragent_effects_total{kind="add-peer",result="applied"} 1`, "peeragent_session_flaps_total 0",
	} {
		if !strings.Contains(scrape, want) {
			t.Errorf("the scrape of the metrics address lacks %s", want)
		}
	}
	var sample []string
	for _, l := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(l, "peeragent_") && !strings.Contains(l, "_bucket{") {
			sample = append(sample, l)
		}
	}
	t.Logf("scrape of %s/metrics (peeragent_ series, no histogram buckets):\n%s", metricsA, strings.Join(sample, "\n"))
}

// waitEstablished waits until the agent's neighbor at addr (without a
// password) is established.
func waitEstablished(t *testing.T, a *agentProc, addr string) {
	t.Helper()
	waitState(t, context.Background(), 45*time.Second, a.fetch, a.node+": neighbor "+addr+" established", func(d stateDump) bool {
		s := d.session(addr)
		return s != nil && s.Phase == state.PhaseEstablished
	})
}

func portOf(hostport string) string {
	_, p, _ := net.SplitHostPort(hostport)
	return p
}

func metricsText(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	return string(b)
}
