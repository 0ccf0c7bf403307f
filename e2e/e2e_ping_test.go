//go:build linux

package e2e

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/peeragent/peeragent/internal/testrig/daemon"
	testnetns "github.com/peeragent/peeragent/internal/testrig/netns"
	"github.com/peeragent/peeragent/state"
)

// The ping rig: two network namespaces of the test's own, joined by a veth
// pair, one agent in each with --dataplane linux, and ICMP echoes between
// pod addresses of the two nodes' blocks (docs/routes.md appendix A,
// scenarios 33 and 34). The echoes are sent from the test process through
// a raw socket opened inside namespace A, so that no ping binary is
// needed; only root and iproute2's ip.

var netnsDep = daemon.Dependency{
	What:  "network namespace (root and iproute2's ip)",
	Tests: "TestPing* (kernel routes and ICMP between two agents) and TestBird* (kernel routes across BIRD's session loss)",
}

const (
	pingAddrA = "192.168.77.1"
	pingAddrB = "192.168.77.2"
	pingPodA  = "10.244.1.5"
	pingPodB  = "10.244.2.5"
	pingBlkA  = "10.244.1.0/26"
	pingBlkB  = "10.244.2.0/26"
	pingHTTP  = "127.0.0.1:9179" // inside each namespace
	pingProto = 201
	pingPrio  = 1024
)

var pingNodes = nodeYAML("node-a", `projectcalico.org/IPv4Address: 192.168.77.1/24`) + "---\n" + nodeYAML("node-b", `projectcalico.org/IPv4Address: 192.168.77.2/24`)

const pingBGP = `apiVersion: crd.projectcalico.org/v1
kind: BGPConfiguration
metadata: {name: default}
spec:
  nodeToNodeMeshEnabled: true
  listenPort: 179
`

const pingPool = `apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata: {name: default-ipv4-ippool}
spec:
  cidr: 10.244.0.0/16
  ipipMode: Never
  vxlanMode: Never
  blockSize: 26
`

const pingAffinityA = `apiVersion: crd.projectcalico.org/v1
kind: BlockAffinity
metadata: {name: node-a-10-244-1-0-26}
spec: {node: node-a, cidr: 10.244.1.0/26, state: confirmed, deleted: "false"}
`

const pingAffinityB = `apiVersion: crd.projectcalico.org/v1
kind: BlockAffinity
metadata: {name: node-b-10-244-2-0-26}
spec: {node: node-b, cidr: 10.244.2.0/26, state: confirmed, deleted: "false"}
`

// TestPingBetweenTwoAgents: docs/routes.md appendix A scenario 33 (kernel
// routes from two agents carry pod traffic; a deleted affinity withdraws
// the other side's route within a second) and scenario 34 (SIGKILL and
// restart of one agent: the kernel routes stay, no route is deleted or
// re-added, no echo is lost; §9.6).
func TestPingBetweenTwoAgents(t *testing.T) {
	requireNetns(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	nsA, nsB := vethPair(t, ctx, "", "pa0", "pb0")
	for _, s := range []struct{ ns, dev, addr, pod string }{
		{nsA, "pa0", pingAddrA, pingPodA},
		{nsB, "pb0", pingAddrB, pingPodB},
	} {
		ipCmd(t, ctx, "-n", s.ns, "addr", "add", s.pod+"/32", "dev", "lo")
		ipCmd(t, ctx, "-n", s.ns, "addr", "add", s.addr+"/24", "dev", s.dev)
		ipCmd(t, ctx, "-n", s.ns, "link", "set", s.dev, "up")
	}

	pinger := newPinger(t, nsA, pingPodA)

	// No routes yet: no reply.
	if ok, err := pinger.echo(ctx, pingPodB, 1, time.Second); ok {
		t.Fatalf("echo %s -> %s answered before any route exists", pingPodA, pingPodB)
	} else {
		t.Logf("before the agents: echo %s -> %s: no reply (%v)", pingPodA, pingPodB, err)
	}

	dirA, dirB := pingManifests(t, true), pingManifests(t, true)
	bin := buildAgent(t)
	a := startNSAgent(t, bin, nsA, dirA, "node-a", pingAddrA)
	b := startNSAgent(t, bin, nsB, dirB, "node-b", pingAddrB)

	a.waitRoutes(t, ctx, pingAddrB, pingBlkB, pingBlkA)
	b.waitRoutes(t, ctx, pingAddrA, pingBlkA, pingBlkB)
	checkKernel(t, nsA, pingBlkB, pingAddrB, pingBlkA)
	checkKernel(t, nsB, pingBlkA, pingAddrA, pingBlkB)
	for _, ns := range []string{nsA, nsB} {
		out, _ := exec.Command("ip", "-n", ns, "route", "show", "proto", "201").CombinedOutput()
		t.Logf("ip -n %s route show proto 201:\n%s", ns, out)
	}
	if ok, err := pinger.echo(ctx, pingPodB, 2, 2*time.Second); !ok {
		t.Fatalf("echo %s -> %s: no reply with both routes installed: %v", pingPodA, pingPodB, err)
	}
	t.Logf("with the routes: echo %s -> %s: reply", pingPodA, pingPodB)

	t.Run("routes and status show the table", func(t *testing.T) {
		checkRoutesCLI(t, ctx, bin, a)
	})

	t.Run("restart keeps forwarding", func(st *testing.T) {
		// The restarted agent belongs to the whole test (t), not to the
		// subtest: it runs on for the next one.
		a = scenarioRestart(st, t, ctx, bin, a, b, pinger, nsA, nsB, dirA)
	})

	t.Run("deleted affinity withdraws", func(t *testing.T) {
		// Scenario 33: node-b's affinity goes from node-b's datastore;
		// node-a's kernel route to the block goes within a second. The
		// manifest directory applies a removal only once the file has
		// been absent for 2 s (watch/files_dir.go, removalDelay), which a
		// cluster's watch does not: the second is counted from node-b
		// acting on it, which is when its own blackhole of the block goes
		// (the same change withdraws the path, docs/routes.md §9.3 rule 2).
		h := nsHandle(t, nsA)
		watchA := watchRoutes(t, nsA)
		watchB := watchRoutes(t, nsB)
		t0 := time.Now()
		if err := os.Remove(filepath.Join(dirB, "affinity-b.yaml")); err != nil {
			t.Fatal(err)
		}
		wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
		defer wcancel()
		atB, ok := watchB.waitFor(wctx, "RTM_DELROUTE", pingBlkB)
		if !ok {
			t.Fatalf("node-b still has its blackhole %s 15 s after its affinity was deleted: %q", pingBlkB, watchB.stop())
		}
		atA, ok := watchA.waitFor(wctx, "RTM_DELROUTE", pingBlkB)
		if !ok {
			t.Fatalf("node-a still routes %s 15 s after node-b's affinity was deleted: %q", pingBlkB, watchA.stop())
		}
		took := atA.Sub(atB)
		t.Logf("scenario 33: node-a's route to %s removed %v after node-b withdrew it (%v after the file was removed; node-b acted %v after)",
			pingBlkB, took.Round(10*time.Microsecond), atA.Sub(t0).Round(time.Millisecond), atB.Sub(t0).Round(time.Millisecond))
		if took > time.Second {
			t.Errorf("route removal took %v after node-b withdrew it, want within a second", took)
		}
		if r, ok := kernelRoute(t, h, pingBlkB); ok {
			t.Errorf("node-a's kernel still has %s after its RTM_DELROUTE", r)
		}
		if ev := watchA.stop(); len(ev) != 1 {
			t.Errorf("route messages in node-a's namespace: %q, want only the RTM_DELROUTE of %s", ev, pingBlkB)
		}
		if ok, _ := pinger.echo(ctx, pingPodB, 100, time.Second); ok {
			t.Errorf("echo %s -> %s answered after the route was withdrawn", pingPodA, pingPodB)
		}
	})

	t.Run("held route swept once settled", func(st *testing.T) {
		scenarioSweep(st, t, ctx, bin, a, b, nsA, dirA, dirB)
	})
}

// scenarioSweep is the end of scenario 34: a route left from a killed
// run whose path went meanwhile (node-b's agent is gone too) is held by
// the restarted agent, in the kernel, until the routes are settled, and
// removed then (docs/routes.md §9.6 rule 3). node-b never comes back, so
// only --route-settle-max (3 s after the speaker start, the alarm's Tick)
// settles them.
func scenarioSweep(t, owner *testing.T, ctx context.Context, bin string, a, b *nsAgent, nsA, dirA, dirB string) {
	writeFile(t, dirB, "affinity-b.yaml", pingAffinityB)
	a.waitRoutes(t, ctx, pingAddrB, pingBlkB, pingBlkA)
	for _, ag := range []*nsAgent{b, a} {
		if err := ag.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		ag.cmd.Wait()
	}
	h := nsHandle(t, nsA)
	if _, ok := kernelRoute(t, h, pingBlkB); !ok {
		t.Fatalf("node-a's route to %s went with its agent", pingBlkB)
	}
	t0 := time.Now()
	a2 := startNSAgent(owner, bin, nsA, dirA, "node-a", pingAddrA, "--route-settle-max", "3s")
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	sawHeld := false
	for {
		// The kernel first, then /state: settled never goes back within
		// a speaker generation, so a route missing while a later /state
		// is not settled was swept too early.
		_, present := kernelRoute(t, h, pingBlkB)
		d, err := a2.fetch(wctx)
		if err == nil && d.Routing.SpeakerGen > 0 {
			if !present && !d.Routing.Settled {
				t.Fatalf("node-a removed the held route %s before its routes were settled", pingBlkB)
			}
			for _, r := range d.Routes {
				if r.Prefix.String() == pingBlkB && r.Phase == state.RoutePhaseHeld && present && !d.Routing.Settled {
					sawHeld = true
				}
			}
			if !present {
				break
			}
		}
		select {
		case <-poll.C:
		case <-wctx.Done():
			t.Fatalf("node-a's held route %s not swept 30 s after its restart (settle max 3 s)", pingBlkB)
		}
	}
	t.Logf("scenario 34: held route %s from the killed run swept %v after the restart, once settled", pingBlkB, time.Since(t0).Round(time.Millisecond))
	if !sawHeld {
		t.Errorf("never saw %s held in the kernel while node-a was not settled", pingBlkB)
	}
	if _, ok := kernelRoute(t, h, pingBlkA); !ok {
		t.Errorf("node-a's own blackhole %s went with the sweep", pingBlkA)
	}
}

// scenarioRestart is scenario 34: SIGKILL node-a's agent while echoes go
// every 100 ms, restart it, wait until it is settled again; no kernel
// route of either namespace is deleted or re-added, and every echo is
// answered (§9.6: adopt, then sweep; B keeps A's paths as stale during
// graceful restart).
func scenarioRestart(t, owner *testing.T, ctx context.Context, bin string, a, b *nsAgent, p *pinger, nsA, nsB, dirA string) *nsAgent {
	watchA := watchRoutes(t, nsA)
	watchB := watchRoutes(t, nsB)
	stop := p.stream(ctx, pingPodB, 100*time.Millisecond)

	p.waitReplies(t, ctx, 5) // the stream runs before the kill
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.cmd.Wait()
	t0 := time.Now()
	a2 := startNSAgent(owner, bin, nsA, dirA, "node-a", pingAddrA)
	a2.waitRoutes(t, ctx, pingAddrB, pingBlkB, pingBlkA)
	b.waitRoutes(t, ctx, pingAddrA, pingBlkA, pingBlkB)
	t.Logf("scenario 34: node-a restarted, both sides established and settled in %v", time.Since(t0).Round(time.Millisecond))
	p.waitReplies(t, ctx, p.replies()+5) // and the stream goes on after it
	sent, got, lost, errs := stop()
	t.Logf("scenario 34: %d echoes every 100 ms across the SIGKILL and restart, %d replies, lost seq %v, send errors %v", sent, got, lost, errs)
	if len(lost) > 0 {
		t.Errorf("%d echoes lost across the restart: seq %v", len(lost), lost)
	}
	for _, w := range []struct {
		ns string
		ev func() []string
	}{{nsA, watchA.stop}, {nsB, watchB.stop}} {
		if ev := w.ev(); len(ev) > 0 {
			t.Errorf("%s: kernel route changes of unchanged prefixes across the restart:\n%s", w.ns, strings.Join(ev, "\n"))
		} else {
			t.Logf("scenario 34: %s: no route deleted or added across the restart", w.ns)
		}
	}
	d := a2.state(t, ctx)
	for _, r := range d.Routes {
		if r.Prefix.String() == pingBlkB || r.Prefix.String() == pingBlkA {
			// §9.6 rule 2: a held route equal to the desired one costs no call.
			if r.Phase != state.RoutePhaseAdopted {
				t.Errorf("node-a after restart: %s phase %s, want adopted", r.Prefix, r.Phase)
			}
		}
	}
	return a2
}

// ipCmd runs ip with args, failing t on an error.
func ipCmd(t *testing.T, ctx context.Context, args ...string) {
	t.Helper()
	if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// inNS runs f on a thread switched into the named namespace (sockets f
// opens stay in it): the netns rig's Do.
var inNS = testnetns.Do

func nsHandle(t *testing.T, name string) *netlink.Handle {
	t.Helper()
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// nsAgent is an agent running in a namespace; its HTTP address is inside.
type nsAgent struct {
	node, ns string
	out      *os.File
	cmd      *exec.Cmd
	client   *http.Client
}

func (a *nsAgent) logs() string {
	b, _ := os.ReadFile(a.out.Name())
	return string(b)
}

func startNSAgent(t *testing.T, bin, ns, dir, node, addr string, extra ...string) *nsAgent {
	t.Helper()
	return startNSAgentVia(t, nil, bin, ns, dir, node, addr, extra...)
}

// startNSAgentVia is startNSAgent with the agent run through the command
// wrap (e.g. setpriv dropping a capability); nil: none.
func startNSAgentVia(t *testing.T, wrap []string, bin, ns, dir, node, addr string, extra ...string) *nsAgent {
	t.Helper()
	logf, err := os.Create(filepath.Join(t.TempDir(), node+".log"))
	if err != nil {
		t.Fatal(err)
	}
	// ip netns exec execs the agent (through wrap): the process is the agent's.
	argv := append(append([]string{"netns", "exec", ns}, wrap...), bin)
	cmd := exec.Command("ip", append(append(argv, "run", "--from", dir, "--node", node,
		"--dataplane", "linux", "--bgp-listen-address", addr,
		"--http-addr", pingHTTP, "--metrics-addr", "", "--log-level", "debug"), extra...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &nsAgent{node: node, ns: ns, out: logf, cmd: cmd, client: nsHTTPClient(ns)}
	stopOnCleanup(t, cmd, node, a.logs)
	return a
}

// nsHTTPClient is an HTTP client whose connections are made inside ns.
func nsHTTPClient(ns string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			var c net.Conn
			err := inNS(ns, func() error {
				var err error
				c, err = (&net.Dialer{}).DialContext(ctx, network, address)
				return err
			})
			return c, err
		},
	}}
}

// fetch reads the agent's /state through its network namespace.
func (a *nsAgent) fetch(ctx context.Context) (stateDump, error) {
	return fetchState(ctx, a.client, pingHTTP)
}

func (a *nsAgent) state(t *testing.T, ctx context.Context) stateDump {
	t.Helper()
	d, err := a.fetch(ctx)
	if err != nil {
		t.Fatalf("%s /state: %v", a.node, err)
	}
	return d
}

// waitRoutes waits until the agent's session with peer is established,
// its table has learned via peer applied (or adopted) and its own block
// as a drop route applied (or adopted), and the routes are settled.
func (a *nsAgent) waitRoutes(t *testing.T, ctx context.Context, peer, learned, own string) {
	t.Helper()
	waitState(t, ctx, 60*time.Second, a.fetch,
		fmt.Sprintf("%s: established session with %s, route %s via it and drop %s, settled", a.node, peer, learned, own),
		func(d stateDump) bool {
			s, r, o := d.session(peer), d.route(learned), d.route(own)
			return s != nil && s.Phase == state.PhaseEstablished && installed(r) && len(r.Via) == 1 && r.Via[0].String() == peer &&
				installed(o) && o.Drop && d.Routing.Settled
		})
}

// kernelRoute is the main-table route of prefix in the namespace of h with
// the agent's protocol, if any.
func kernelRoute(t *testing.T, h *netlink.Handle, prefix string) (netlink.Route, bool) {
	t.Helper()
	_, dst, _ := net.ParseCIDR(prefix)
	rs, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN, Protocol: pingProto, Dst: dst},
		netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_DST)
	if err != nil {
		t.Fatalf("route list: %v", err)
	}
	if len(rs) == 0 {
		return netlink.Route{}, false
	}
	return rs[0], true
}

// pingManifests is a new manifest directory of the ping cluster: both
// nodes, the BGP configuration, the pool and node-a's block; node-b's
// block too when withB.
func pingManifests(t *testing.T, withB bool) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "nodes.yaml", pingNodes)
	writeFile(t, dir, "bgp.yaml", pingBGP)
	writeFile(t, dir, "pool.yaml", pingPool)
	writeFile(t, dir, "affinity-a.yaml", pingAffinityA)
	if withB {
		writeFile(t, dir, "affinity-b.yaml", pingAffinityB)
	}
	return dir
}

// ipRoute is a route as `ip -j route` shows it.
type ipRoute struct {
	Type     string `json:"type"`
	Dst      string `json:"dst"`
	Gateway  string `json:"gateway"`
	Dev      string `json:"dev"`
	Protocol string `json:"protocol"`
	Metric   int    `json:"metric"`
}

// kernelRoutes reads `ip -j route show table main` (with args such as
// -6 before route) in ns and returns its routes of protocol 201, the
// agent's, and the whole output.
func kernelRoutes(t *testing.T, ns string, args ...string) ([]ipRoute, []byte) {
	t.Helper()
	cmd := append(append([]string{"-n", ns, "-j"}, args...), "route", "show", "table", "main")
	out, err := exec.Command("ip", cmd...).Output()
	if err != nil {
		t.Fatalf("ip %s: %v", strings.Join(cmd, " "), err)
	}
	var rs, ours []ipRoute
	if err := json.Unmarshal(out, &rs); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(cmd, " "), err, out)
	}
	for _, r := range rs {
		if r.Protocol == fmt.Sprint(pingProto) { // not the kernel's own routes of the link
			ours = append(ours, r)
		}
	}
	return ours, out
}

// checkKernel reads `ip -j route show table main` in ns: of protocol
// 201, learned via nextHop and own as a blackhole, both with metric 1024, and nothing else.
func checkKernel(t *testing.T, ns, learned, nextHop, own string) {
	t.Helper()
	rs, out := kernelRoutes(t, ns)
	var via, drop bool
	for _, r := range rs {
		if r.Metric != pingPrio {
			t.Errorf("%s: route %s: metric %d, want %d", ns, r.Dst, r.Metric, pingPrio)
		}
		switch {
		case r.Dst == learned && r.Gateway == nextHop && r.Type == "":
			via = true
		case r.Dst == own && r.Type == "blackhole" && r.Gateway == "":
			drop = true
		default:
			t.Errorf("%s: unexpected route of protocol 201: %+v", ns, r)
		}
	}
	if !via || !drop {
		t.Errorf("%s: want %s via %s and blackhole %s, protocol 201, metric 1024; have %s", ns, learned, nextHop, own, out)
	}
}

// routeWatch records every kernel route message of the agent's protocol
// in a namespace, from its start on.
type routeWatch struct {
	done     chan struct{}
	finished chan struct{}
	once     sync.Once

	mu      sync.Mutex
	events  []string
	at      []time.Time   // when each event was read
	changed chan struct{} // closed and replaced at each event
}

func watchRoutes(t *testing.T, ns string) *routeWatch {
	t.Helper()
	h, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	w := &routeWatch{done: make(chan struct{}), finished: make(chan struct{}), changed: make(chan struct{})}
	ch := make(chan netlink.RouteUpdate, 64)
	if err := netlink.RouteSubscribeWithOptions(ch, w.done, netlink.RouteSubscribeOptions{
		Namespace: &h,
		ErrorCallback: func(err error) {
			select {
			case <-w.done: // the socket closed by stop
			default:
				t.Errorf("%s: route watch: %v", ns, err)
			}
		},
	}); err != nil {
		t.Fatalf("%s: route watch: %v", ns, err)
	}
	go func() {
		defer close(w.finished)
		for u := range ch {
			if u.Protocol != pingProto {
				continue
			}
			kind := "RTM_NEWROUTE"
			if u.Type == unix.RTM_DELROUTE {
				kind = "RTM_DELROUTE"
			}
			w.mu.Lock()
			w.events = append(w.events, fmt.Sprintf("%s %s", kind, u.Route))
			w.at = append(w.at, time.Now())
			close(w.changed)
			w.changed = make(chan struct{})
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

// seen returns the messages so far, when each was read, and a channel
// closed at the next one.
func (w *routeWatch) seen() ([]string, []time.Time, chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.events...), append([]time.Time(nil), w.at...), w.changed
}

// waitFor waits until a message contains every one of parts and returns
// when it was read; false when ctx ends first.
func (w *routeWatch) waitFor(ctx context.Context, parts ...string) (time.Time, bool) {
	for {
		ev, at, changed := w.seen()
		for i, e := range ev {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(e, p)
			}
			if all {
				return at[i], true
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return time.Time{}, false
		}
	}
}

// stop ends the watch and returns every message it saw.
func (w *routeWatch) stop() []string {
	w.once.Do(func() {
		close(w.done)
		<-w.finished
	})
	ev, _, _ := w.seen()
	return ev
}

// pinger sends ICMP echoes from a source address inside a namespace
// through a raw socket opened there.
type pinger struct {
	conn *net.IPConn
	id   uint16

	mu      sync.Mutex
	got     map[uint16]bool
	waiters []chan struct{}
	done    chan struct{}
}

func newPinger(t *testing.T, ns, src string) *pinger {
	t.Helper()
	var c *net.IPConn
	err := inNS(ns, func() error {
		var err error
		c, err = net.ListenIP("ip4:icmp", &net.IPAddr{IP: net.ParseIP(src)})
		return err
	})
	if err != nil {
		t.Fatalf("raw ICMP socket in %s: %v", ns, err)
	}
	p := &pinger{conn: c, id: uint16(rand.Uint32()), got: map[uint16]bool{}, done: make(chan struct{})}
	go p.read()
	t.Cleanup(func() {
		c.Close()
		<-p.done
	})
	return p
}

// read records the echo replies addressed to this pinger by sequence.
func (p *pinger) read() {
	defer close(p.done)
	buf := make([]byte, 1500)
	for {
		n, _, err := p.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if n < 8 || buf[0] != 0 || binary.BigEndian.Uint16(buf[4:]) != p.id {
			continue // not an echo reply of ours
		}
		p.mu.Lock()
		p.got[binary.BigEndian.Uint16(buf[6:])] = true
		for _, w := range p.waiters {
			close(w)
		}
		p.waiters = nil
		p.mu.Unlock()
	}
}

func (p *pinger) send(dst string, seq uint16) error {
	msg := make([]byte, 16)
	msg[0] = 8 // echo request
	binary.BigEndian.PutUint16(msg[4:], p.id)
	binary.BigEndian.PutUint16(msg[6:], seq)
	binary.BigEndian.PutUint64(msg[8:], uint64(time.Now().UnixNano()))
	var sum uint32
	for i := 0; i < len(msg); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(msg[i:]))
	}
	sum = (sum >> 16) + (sum & 0xffff)
	sum += sum >> 16
	binary.BigEndian.PutUint16(msg[2:], ^uint16(sum))
	_, err := p.conn.WriteTo(msg, &net.IPAddr{IP: net.ParseIP(dst)})
	return err
}

// changed returns a channel closed at the next reply received.
func (p *pinger) changed() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := make(chan struct{})
	p.waiters = append(p.waiters, w)
	return w
}

func (p *pinger) has(seq uint16) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.got[seq]
}

func (p *pinger) replies() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.got)
}

// echo sends one echo (seq) and waits up to wait for its reply; the error
// says why there was none.
func (p *pinger) echo(ctx context.Context, dst string, seq uint16, wait time.Duration) (bool, error) {
	w := p.changed()
	if err := p.send(dst, seq); err != nil {
		return false, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for !p.has(seq) {
		select {
		case <-w:
			w = p.changed()
		case <-timer.C:
			return p.has(seq), fmt.Errorf("no reply within %v", wait)
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return true, nil
}

// waitReplies waits until n replies have been received in all.
func (p *pinger) waitReplies(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		w := p.changed()
		if p.replies() >= n {
			return
		}
		select {
		case <-w:
		case <-wctx.Done():
			t.Fatalf("only %d echo replies, want %d", p.replies(), n)
		}
	}
}

// stream sends an echo every interval from seq 1000 on; the returned func
// stops it, waits for the outstanding replies (up to 2 s) and returns the
// number sent and answered, the unanswered sequence numbers and the
// errors of sending.
func (p *pinger) stream(ctx context.Context, dst string, interval time.Duration) func() (int, int, []uint16, []error) {
	const first = 1000
	quit := make(chan struct{})
	var sent int
	var sendErrs []error
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for seq := uint16(first); ; seq++ {
			if err := p.send(dst, seq); err != nil {
				sendErrs = append(sendErrs, err)
			}
			sent++
			select {
			case <-tick.C:
			case <-quit:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() (int, int, []uint16, []error) {
		close(quit)
		<-finished
		deadline := time.NewTimer(2 * time.Second)
		defer deadline.Stop()
		for {
			w := p.changed()
			var lost []uint16
			for seq := uint16(first); seq < uint16(first+sent); seq++ {
				if !p.has(seq) {
					lost = append(lost, seq)
				}
			}
			if len(lost) == 0 {
				return sent, sent, nil, sendErrs
			}
			select {
			case <-w:
			case <-deadline.C:
				return sent, sent - len(lost), lost, sendErrs
			}
		}
	}
}
