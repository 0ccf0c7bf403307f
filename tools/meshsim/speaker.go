package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/peeragent/peeragent/internal/testrig/daemon"
	"github.com/peeragent/peeragent/internal/testrig/netns"
)

// asNumber is the cluster's AS (Calico's default).
const asNumber = 64512

// speaker is one kind of BGP speaker the simulation runs on every node.
type speaker interface {
	// name is the column's name in the report.
	name() string
	// prepare writes what the node's speaker reads (config, manifests).
	prepare(t *topology, nd *node, dir string) error
	// command runs the node's speaker inside its namespace; ip netns
	// exec execs it, so the process is the speaker itself.
	command(nd *node, dir string) *exec.Cmd
	// established is how many of the node's mesh sessions are Established,
	// as the speaker itself reports.
	established(nd *node, dir string) (int, error)
	// logCounts are the lines of interest in a log, by label.
	logCounts(log string) map[string]int
}

// proc is a running speaker and its log.
type proc struct {
	p       *daemon.Process
	log     string
	started time.Time
}

func start(sp speaker, nd *node, dir string, gen int) (*proc, error) {
	log := filepath.Join(dir, fmt.Sprintf("speaker.%d.log", gen))
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := sp.command(nd, dir)
	cmd.Dir = dir
	started := time.Now()
	p, err := daemon.Start(sp.name(), cmd, f)
	f.Close() // the child holds its own copy
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %w", sp.name(), nd.name, err)
	}
	return &proc{p: p, log: log, started: started}, nil
}

// agent is peeragent with the Linux dataplane, reading a manifest
// directory written for its node.
type agent struct {
	bin   string
	extra []string // more run flags (-agent-flag)
}

func (agent) name() string { return "peeragent" }

func (a agent) prepare(t *topology, nd *node, dir string) error {
	m := filepath.Join(dir, "manifests")
	if err := os.MkdirAll(m, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(m, "cluster.yaml"), []byte(manifests(t)), 0o644)
}

// manifests are the cluster's objects as the agent's manifest source
// reads them: the default BGPConfiguration (the mesh on), one IPPool, and
// per node its Node (with Calico's address annotation) and the
// BlockAffinity of its block.
func manifests(t *topology) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: crd.projectcalico.org/v1
kind: BGPConfiguration
metadata:
  name: default
spec:
  asNumber: %d
  nodeToNodeMeshEnabled: true
---
apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata:
  name: default-ipv4-ippool
spec:
  cidr: %s
  ipipMode: Never
  vxlanMode: Never
  natOutgoing: true
  blockSize: 26
`, asNumber, pool)
	for _, nd := range t.nodes {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Node
metadata:
  name: %s
  annotations:
    projectcalico.org/IPv4Address: %s/%d
---
apiVersion: crd.projectcalico.org/v1
kind: BlockAffinity
metadata:
  name: %s-%s
spec:
  node: %s
  cidr: %s
  state: confirmed
  deleted: "false"
`, nd.name, nd.addr, subnet.Bits(), nd.name, strings.NewReplacer(".", "-", "/", "-").Replace(nd.block.String()), nd.name, nd.block)
	}
	return b.String()
}

func (a agent) command(nd *node, dir string) *exec.Cmd {
	args := []string{"netns", "exec", nd.ns, a.bin, "run",
		"--from", filepath.Join(dir, "manifests"), "--node", nd.name, "--dataplane", "linux",
		"--bgp-listen-address", nd.addr.String(), "--http-addr", nd.addr.String() + ":9179",
		"--metrics-addr", "", "--log-level", "info"}
	return exec.Command("ip", append(args, a.extra...)...)
}

func (agent) established(nd *node, _ string) (int, error) {
	body, err := httpGet(nd.ns, "http://"+nd.addr.String()+":9179/metrics")
	if err != nil {
		return 0, err
	}
	const series = `peeragent_sessions{group="mesh",state="established"} `
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, series); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err
		}
	}
	return 0, nil
}

func (agent) logCounts(log string) map[string]int {
	return countLines(log, map[string]func(string) bool{
		"refused":      has("Closed an accepted connection"),
		"refused2":     has("accepted conn is closed"),
		"restart flag": has("restart flag is not set"),
	})
}

// httpGet fetches url from inside the namespace: the connection's socket
// is made on a thread switched into it. It asks for the body uncompressed
// (Go's client asks for gzip by default): the poll reads one line, and
// compressing the whole /metrics text for it was about half of what a
// poll cost the agent, CPU that a speaker asked over a socket, as BIRD
// is, does not spend.
func httpGet(ns, url string) (string, error) {
	tr := &http.Transport{DisableKeepAlives: true, DisableCompression: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var c net.Conn
			err := netns.Do(ns, func() error {
				var err error
				c, err = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
				return err
			})
			return c, err
		}}
	cl := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// countLines counts the lines of a file holding each label's text. The
// agent's log limiter (internal/loglimit) lets 3 records a minute through
// per message and neighbor and puts the count of the others in the next
// one's suppressed=N: those are added.
func countLines(path string, want map[string]func(string) bool) map[string]int {
	out := map[string]int{}
	for label := range want {
		out[label] = 0
	}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		for label, match := range want {
			if match(l) {
				out[label] += 1 + suppressed(l)
			}
		}
	}
	return out
}

func suppressed(l string) int {
	_, v, ok := strings.Cut(l, "suppressed=")
	if !ok {
		return 0
	}
	end := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if end >= 0 {
		v = v[:end]
	}
	n, _ := strconv.Atoi(v)
	return n
}

func has(text string) func(string) bool {
	return func(l string) bool { return strings.Contains(l, text) }
}

// floorSpeaker is the GoBGP floor (tools/meshsim/floor): the agent's
// GoBGP v4.8.0 configured as the agent configures it for the mesh, with
// nothing of the agent around it. noLimit runs it without the prefix
// limit (-max-prefixes 0), to measure the share of the limit's check.
type floorSpeaker struct {
	bin     string
	extra   []string // more flags (-floor-flag)
	noLimit bool
}

func (f floorSpeaker) name() string {
	if f.noLimit {
		return "GoBGP floor, no prefix limit"
	}
	return "GoBGP floor"
}

// prepare writes the other nodes' addresses, one a line, to the file
// floorPeers of the node's directory.
func (floorSpeaker) prepare(t *topology, nd *node, dir string) error {
	var b strings.Builder
	for _, o := range t.nodes {
		if o != nd {
			b.WriteString(o.addr.String() + "\n")
		}
	}
	return os.WriteFile(filepath.Join(dir, floorPeers), []byte(b.String()), 0o644)
}

// floorPeers is the file of the node's directory the floor reads its
// peers from.
const floorPeers = "peers"

func (f floorSpeaker) command(nd *node, dir string) *exec.Cmd {
	args := []string{"netns", "exec", nd.ns, f.bin, "-asn", strconv.Itoa(asNumber),
		"-addr", nd.addr.String(), "-block", nd.block.String(), "-pool", pool.String(),
		"-peers-file", filepath.Join(dir, floorPeers), "-http", nd.addr.String() + ":9179"}
	args = append(args, f.extra...)
	if f.noLimit {
		args = append(args, "-max-prefixes", "0")
	}
	return exec.Command("ip", args...)
}

// established asks the floor's /established, as the agent's /metrics is
// asked.
func (floorSpeaker) established(nd *node, _ string) (int, error) {
	body, err := httpGet(nd.ns, "http://"+nd.addr.String()+":9179/established")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(body))
}

// logCounts are the agent's: the lines are GoBGP's (no log limiter, so
// no suppressed counts).
func (floorSpeaker) logCounts(log string) map[string]int { return agent{}.logCounts(log) }
