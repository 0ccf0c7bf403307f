package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	birdtest "github.com/peeragent/peeragent/internal/testrig/bird"
)

// TestRunReportsAnotherSpeaker: BIRD (as calico-node's, or
// calico-vpp-agent's GoBGP would) already listens on the node's BGP
// address and port when the real agent starts there: the agent does not
// bind the port, /state has one "server" problem naming the other
// speaker, /readyz is 503 with it, /healthz stays 200 (a restart by the
// kubelet would not free the port), and BIRD keeps its port.
func TestRunReportsAnotherSpeaker(t *testing.T) {
	birdtest.Require(t)
	addr := netip.MustParseAddr("127.0.0.45")
	requireAddr(t, addr.String())
	port := birdtest.FreePort(t, addr)
	b := birdtest.Start(t, birdtest.Config{Address: addr, Port: port, AS: 65001, Neighbors: []birdtest.Neighbor{{
		Name: "tor", Address: netip.MustParseAddr("127.0.0.1"), Port: port, AS: 64513}}})
	dir := t.TempDir()
	writeFile(t, dir, "nodes.yaml", nodeYAML("node-a", "projectcalico.org/IPv4Address: 127.0.0.45/8"))
	writeFile(t, dir, "bgp.yaml", fmt.Sprintf(`apiVersion: crd.projectcalico.org/v1
kind: BGPConfiguration
metadata: {name: default}
spec: {asNumber: 64512, listenPort: %d}
`, port))
	a := startAgent(t, buildAgent(t), dir, "node-a", addr.String())

	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	want := fmt.Sprintf("another BGP speaker holds port %d: a listener answers on %s", port, netip.AddrPortFrom(addr, uint16(port)))
	var problem, readyz string
	for {
		d, err := fetchState(ctx, nil, a.http)
		if err == nil {
			for _, p := range d.Problems {
				if p.Object == "server" && strings.Contains(p.Reason, want) {
					problem = p.Reason
				}
			}
		}
		if problem != "" {
			if resp, err := http.Get("http://" + a.http + "/readyz"); err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), want) {
					readyz = strings.TrimSpace(string(body))
					break
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no server problem %q with /readyz 503 in time (problem %q)\n%s", want, problem, a.logs())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Logf("/state problem server: %s", problem)
	t.Logf("/readyz: %s", readyz)
	resp, err := http.Get("http://" + a.http + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("/healthz: %d %s", resp.StatusCode, strings.TrimSpace(string(body)))
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz %d %q while another speaker holds the port, want 200: the kubelet would restart the agent in a loop",
			resp.StatusCode, body)
	}
	d, err := fetchState(ctx, nil, a.http)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range d.Problems {
		if p.Object == "server" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d server problems, want one: %+v", n, d.Problems)
	}
	if out, err := b.Exec("show", "protocols"); err != nil || !strings.Contains(out, "tor") {
		t.Errorf("BIRD no longer answers: %v %s", err, out)
	}
}
