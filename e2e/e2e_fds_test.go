package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// floodConns is how many idle connections the flood test holds open to
// each of the agent's HTTP listeners.
const floodConns = 3000

// agentFDLimit is the open-files limit the flooded agent runs under: low
// enough that floodConns connections to one listener would take them all.
const agentFDLimit = 1024

// TestListenersSurviveIdleConnectionFlood attacks the agent's listeners as
// a local process (the loopback --http-addr) and a host on the node's
// network (--metrics-addr) would: 3,000 idle connections to each, some
// kept alive after a request, held open, against an agent whose
// open-files limit is 1,024. While they are held, /healthz answers within
// 2 s (the kubelet's probe), /metrics answers, the speaker still accepts a
// connection on its BGP port, and the agent's descriptors stay under its
// limit with the BGP reserve free (docs/semantics.md §7).
func TestListenersSurviveIdleConnectionFlood(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < 2*floodConns+500 {
		t.Skipf("the test itself needs %d descriptors (limit %d, %v)", 2*floodConns+500, lim.Cur, err)
	}
	bin := buildAgent(t)
	dir := t.TempDir()
	bgpPort := freeBGPPort(t)
	writeFile(t, dir, "nodes.yaml", e2eNodes)
	writeFile(t, dir, "bgp.yaml", fmt.Sprintf("apiVersion: crd.projectcalico.org/v1\nkind: BGPConfiguration\nmetadata: {name: default}\nspec: {listenPort: %d}\n", bgpPort))
	a := startLimitedAgent(t, bin, dir, agentFDLimit)
	waitHTTP(t, "http://"+a.http+"/healthz", 30*time.Second)
	pid := a.cmd.Process.Pid
	base := fdCount(t, pid)

	flood := &connFlood{}
	defer flood.close()
	flood.open(t, a.http, floodConns, 100)
	flood.open(t, a.metrics, floodConns, 100)
	t.Logf("held %d idle connections (of %d tried) to %s and %s", len(flood.conns), 2*floodConns, a.http, a.metrics)

	peak := base
	for i := range 3 {
		t0 := time.Now()
		code, err := getWithin("http://"+a.http+"/healthz", 2*time.Second)
		t.Logf("/healthz during the flood (try %d): %d %v in %v", i+1, code, err, time.Since(t0).Round(time.Millisecond))
		if err != nil || code != http.StatusOK {
			t.Errorf("/healthz did not answer 200 within 2 s while %d idle connections were held: %d %v", len(flood.conns), code, err)
		}
		if code, err := getWithin("http://"+a.metrics+"/metrics", 5*time.Second); err != nil || code != http.StatusOK {
			t.Errorf("/metrics during the flood: %d %v", code, err)
		}
		peak = max(peak, fdCount(t, pid))
		flood.open(t, a.http, 200, 50) // new idle ones keep coming
	}
	if err := speakerAccepts(fmt.Sprintf("127.0.0.1:%d", bgpPort)); err != nil {
		t.Errorf("BGP port during the flood: %v", err)
	}
	peak = max(peak, fdCount(t, pid))
	t.Logf("agent descriptors: %d before the flood, at most %d during it (limit %d)", base, peak, agentFDLimit)
	if bound := base + 2*64 + 16; peak > bound {
		t.Errorf("agent held %d descriptors during the flood, want at most %d (%d before + two listeners' caps)", peak, bound, base)
	}
	if logs := a.logs(); strings.Contains(logs, "Failed to AcceptTCP") || strings.Contains(logs, "too many open files") {
		t.Errorf("the agent ran out of descriptors:\n%s", lastLines(logs, 20))
	}
}

// limitedAgent is an agent started under an open-files limit.
type limitedAgent struct {
	agentProc
	metrics string
}

func startLimitedAgent(t *testing.T, bin, dir string, nofile int) *limitedAgent {
	t.Helper()
	logf, err := os.Create(filepath.Join(t.TempDir(), "node-a.log"))
	if err != nil {
		t.Fatal(err)
	}
	a := &limitedAgent{agentProc: agentProc{node: "node-a", http: freeAddr(t, "127.0.0.1"), out: logf},
		metrics: freeAddr(t, "127.0.0.1")}
	// sh's ulimit sets the soft and the hard limit: the agent cannot raise it.
	cmd := exec.Command("sh", "-c", `ulimit -n "$0" && exec "$@"`, strconv.Itoa(nofile), bin, "run", "--from", dir,
		"--node", "node-a", "--bgp-listen-address", "127.0.0.1", "--http-addr", a.http, "--metrics-addr", a.metrics)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a.cmd = cmd
	stopOnCleanup(t, cmd, a.node, a.logs)
	return a
}

// connFlood holds connections open: most never send a request, every
// tenth is kept alive after one.
type connFlood struct {
	mu    sync.Mutex
	conns []net.Conn
}

// open makes n connections to addr from workers goroutines, each dial
// bounded (a full backlog makes a dial wait), all within 20 s.
func (f *connFlood) open(t *testing.T, addr string, n, workers int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	jobs := make(chan int, n)
	for i := range n {
		jobs <- i
	}
	close(jobs)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{Timeout: time.Second}
			for i := range jobs {
				if time.Now().After(deadline) {
					return
				}
				c, err := d.Dial("tcp4", addr)
				if err != nil {
					continue
				}
				if i%10 == 0 {
					c.SetDeadline(time.Now().Add(time.Second))
					fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
					c.Read(make([]byte, 512)) // whatever comes; the connection stays open
					c.SetDeadline(time.Time{})
				}
				f.mu.Lock()
				f.conns = append(f.conns, c)
				f.mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func (f *connFlood) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

// getWithin GETs url on a new connection, bounded by d.
func getWithin(url string, d time.Duration) (int, error) {
	client := &http.Client{Timeout: d, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// speakerAccepts dials the BGP port from an address no neighbor has:
// GoBGP accepts the connection and closes it at once. A speaker that does
// not accept (its accept loop ended on EMFILE, or the descriptors are
// gone) leaves it in the kernel's backlog, and the read times out.
func speakerAccepts(addr string) error {
	c, err := net.DialTimeout("tcp4", addr, 5*time.Second)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(make([]byte, 64))
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("the speaker did not take the connection within 5 s")
	case err == nil:
		return fmt.Errorf("the speaker sent data to an unknown neighbor")
	}
	return nil // EOF or a reset: accepted and closed
}

func fdCount(t *testing.T, pid int) int {
	t.Helper()
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("agent descriptors: %v", err)
	}
	return len(es)
}

func waitHTTP(t *testing.T, url string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		if code, err := getWithin(url, time.Second); err == nil && code == http.StatusOK {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never answered 200", url)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
