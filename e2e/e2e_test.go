package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/peeragent/peeragent/internal/testrig/probe"
)

// The end-to-end test runs two real agent processes (one embedded GoBGP
// each: GoBGP keeps package-level state, so one speaker per process) from
// one manifest directory, on 127.0.0.1 and 127.0.0.2.

var e2eNodes = nodeYAML("node-a", `projectcalico.org/IPv4Address: 127.0.0.1/8`) + "---\n" + nodeYAML("node-b", `projectcalico.org/IPv4Address: 127.0.0.2/8`)

const e2eConfig = `apiVersion: crd.projectcalico.org/v1
kind: BGPConfiguration
metadata: {name: default}
spec:
  listenPort: %d
  nodeMeshPassword:
    secretKeyRef: {name: mesh, key: password}
`

const e2eSecret = `apiVersion: v1
kind: Secret
metadata: {name: mesh, namespace: calico-vpp-dataplane}
stringData: {password: %s}
`

func TestTwoAgentsFollowSecretRotation(t *testing.T) {
	requireAddr(t, "127.0.0.2")
	bin := buildAgent(t)
	dir := t.TempDir()
	port := freeBGPPort(t)
	writeFile(t, dir, "nodes.yaml", e2eNodes)
	writeFile(t, dir, "bgp.yaml", fmt.Sprintf(e2eConfig, port))
	writeFile(t, dir, "secret.yaml", fmt.Sprintf(e2eSecret, "first-e2e-secret"))
	a := startAgent(t, bin, dir, "node-a", "127.0.0.1")
	b := startAgent(t, bin, dir, "node-b", "127.0.0.2")

	// Fingerprints compare only within one agent's run (each process has
	// a key of its own, docs/semantics.md §4): each agent's is followed.
	fp1 := waitSession(t, a, "127.0.0.2", "")
	fpB1 := waitSession(t, b, "127.0.0.1", "")
	if fp1 == fpB1 {
		t.Errorf("two agents show the same password as the same fingerprint %s: their keys are not their own", fp1)
	}
	writeFile(t, dir, "secret.yaml", fmt.Sprintf(e2eSecret, "second-e2e-secret"))
	fp2 := waitSession(t, a, "127.0.0.2", "")
	for fp2 == fp1 {
		fp2 = waitSession(t, a, "127.0.0.2", "")
	}
	for fpB2 := fpB1; fpB2 == fpB1; {
		fpB2 = waitSession(t, b, "127.0.0.1", "")
	}

	// SIGKILL node-a and start it again: it converges back, nothing lost.
	// The restarted node is the passive side toward 127.0.0.2 (node-b
	// dials it); with GoBGP's default connect retry (120 s) this took
	// minutes, with the 5 s the executor sets, seconds. waitSession's
	// bound (45 s) fails the old behaviour; the time is logged.
	a.cmd.Process.Kill()
	a.cmd.Wait()
	t0 := time.Now()
	a2 := startAgent(t, bin, dir, "node-a", "127.0.0.1")
	waitSession(t, a2, "127.0.0.2", "") // established with TCP-MD5: the second password on both sides
	waitSession(t, b, "127.0.0.1", "")
	t.Logf("after SIGKILL and restart of node-a: both sides established in %v", time.Since(t0).Round(time.Millisecond))

	// SIGTERM (a graceful stop: no NOTIFICATION, node-b may keep node-a's
	// routes) and restart: the same.
	a2.cmd.Process.Signal(syscall.SIGTERM)
	a2.cmd.Wait()
	t0 = time.Now()
	a3 := startAgent(t, bin, dir, "node-a", "127.0.0.1")
	waitSession(t, a3, "127.0.0.2", "")
	waitSession(t, b, "127.0.0.1", "")
	t.Logf("after SIGTERM and restart of node-a: both sides established in %v", time.Since(t0).Round(time.Millisecond))
	if !strings.Contains(a2.logs(), "peeragent stopping") {
		t.Errorf("node-a did not stop cleanly on SIGTERM:\n%s", a2.logs())
	}
	for _, ag := range []*agentProc{a, a2, a3, b} {
		for _, secret := range []string{"first-e2e-secret", "second-e2e-secret"} {
			if strings.Contains(ag.logs(), secret) {
				t.Errorf("%s logged a password", ag.node)
			}
			if ag == a || ag == a2 {
				continue // stopped: its HTTP is gone
			}
			for _, path := range []string{"/state", "/actions", "/metrics", "/nope"} {
				if _, body := probe.Get(t, "http://"+ag.http+path); strings.Contains(body, secret) {
					t.Errorf("%s %s shows a password", ag.node, path)
				}
			}
		}
	}
}

type agentProc struct {
	node, http string
	out        *os.File
	cmd        *exec.Cmd
}

func (a *agentProc) logs() string {
	b, _ := os.ReadFile(a.out.Name())
	return string(b)
}

// buildAgent builds the agent binary (go build ./cmd/peeragent) once per
// test process and returns its path.
func buildAgent(t testing.TB) string {
	t.Helper()
	agentBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "peeragent-e2e-")
		if err != nil {
			agentBin.err = err
			return
		}
		agentBin.dir, agentBin.path = dir, filepath.Join(dir, "peeragent")
		out, err := exec.Command("go", "build", "-o", agentBin.path, "../cmd/peeragent").CombinedOutput()
		if err != nil {
			agentBin.err = fmt.Errorf("go build ./cmd/peeragent: %v\n%s", err, out)
		}
	})
	if agentBin.err != nil {
		t.Fatal(agentBin.err)
	}
	return agentBin.path
}

// agentBin is the binary buildAgent built; TestMain removes its directory.
var agentBin struct {
	once      sync.Once
	dir, path string
	err       error
}

// runAgentCmd runs the agent binary with args (and env added to this
// process's environment) to its end and returns its exit code and output.
func runAgentCmd(t *testing.T, bin string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb strings.Builder
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s %s: %v", bin, strings.Join(args, " "), err)
	}
	return code, out.String(), errb.String()
}

func startAgent(t *testing.T, bin, dir, node, addr string, extra ...string) *agentProc {
	logf, err := os.Create(filepath.Join(t.TempDir(), node+".log"))
	if err != nil {
		t.Fatal(err)
	}
	a := &agentProc{node: node, http: freeAddr(t, addr), out: logf}
	cmd := exec.Command(bin, append([]string{"run", "--from", dir, "--node", node, "--bgp-listen-address", addr,
		"--http-addr", a.http, "--metrics-addr", "127.0.0.1:0", "--log-level", "debug"}, extra...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a.cmd = cmd
	stopOnCleanup(t, cmd, node, a.logs)
	return a
}

// waitSession waits until the agent's neighbor at addr is established
// (with password fingerprint fp, when given) and returns the fingerprint.
func waitSession(t *testing.T, a *agentProc, addr, fp string) string {
	t.Helper()
	var got string
	waitState(t, context.Background(), 45*time.Second, a.fetch,
		fmt.Sprintf("%s: neighbor %s established with password %q", a.node, addr, fp), func(d stateDump) bool {
			var ok bool
			got, ok = established(d, addr)
			return ok && (fp == "" || got == fp)
		})
	return got
}

// fetch reads the agent's /state.
func (a *agentProc) fetch(ctx context.Context) (stateDump, error) {
	return fetchState(ctx, nil, a.http)
}

func established(d stateDump, addr string) (string, bool) {
	fp := ""
	for _, n := range d.Neighbors {
		if n.Address == addr {
			fp = n.Password
		}
	}
	for _, s := range d.Sessions {
		if s.Address.String() == addr && s.Phase == "established" {
			return fp, fp != ""
		}
	}
	return "", false
}

func requireAddr(t *testing.T, addr string) {
	ln, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Skipf("cannot bind %s: %v", addr, err)
	}
	ln.Close()
}

// freeBGPPort finds a port free on both agent addresses.
func freeBGPPort(t *testing.T) int {
	for i := 0; i < 50; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.2:%d", port))
		ln.Close()
		if err == nil {
			ln2.Close()
			return port
		}
	}
	t.Fatal("no port free on both 127.0.0.1 and 127.0.0.2")
	return 0
}

func writeFile(t *testing.T, dir, name, body string) {
	// Write then rename, as editors do, so the agent never reads half a file.
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// stopOnCleanup stops an agent process at the end of the test (an
// interrupt, then a kill after 5 s) and shows its log if the test failed.
func stopOnCleanup(t *testing.T, cmd *exec.Cmd, node string, logs func() string) {
	t.Cleanup(func() {
		if cmd.ProcessState != nil {
			return
		}
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", node, logs())
		}
	})
}
