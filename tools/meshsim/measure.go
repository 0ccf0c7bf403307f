package main

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/peeragent/peeragent/internal/testrig/netns"
)

// cpuTime is the CPU time a process has used: the sum of its threads'
// run time from /proc/PID/task/*/schedstat (nanoseconds, unlike the
// 10 ms ticks of /proc/PID/stat).
func cpuTime(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("pid %d: no tasks (%v)", pid, err)
	}
	var sum time.Duration
	for _, t := range tasks {
		raw, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just exited
		}
		f := strings.Fields(string(raw))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, err
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// mem is a process's resident memory, in bytes: VmRSS (every page
// mapped, its own and the binary's and libraries' file pages, which the
// page cache shares between processes), RssAnon (its own: heap, stacks,
// written data) from /proc/PID/status, and Pss (/proc/PID/smaps_rollup:
// each page divided by the number of processes mapping it, so N speakers
// of one binary share its file pages).
type mem struct{ rss, anon, pss int64 }

func memOf(pid int) (mem, error) {
	var m mem
	st, err := procKB(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:", "RssAnon:")
	if err != nil {
		return m, err
	}
	roll, err := procKB(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
	if err != nil {
		return m, err
	}
	return mem{rss: st[0], anon: st[1], pss: roll[0]}, nil
}

// procKB reads the "Name: N kB" lines named from a /proc file, in bytes.
func procKB(path string, names ...string) ([]int64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(names))
	found := 0
	for _, l := range strings.Split(string(raw), "\n") {
		for i, n := range names {
			if v, ok := strings.CutPrefix(l, n); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				if err != nil {
					return nil, fmt.Errorf("%s: %s %w", path, n, err)
				}
				out[i] = kb << 10
				found++
			}
		}
	}
	if found != len(names) {
		return nil, fmt.Errorf("%s: want %v", path, names)
	}
	return out, nil
}

// tcpCounters are a namespace's TCP counters (/proc/net/snmp, per
// namespace): ActiveOpens counts connect()s that sent a SYN, PassiveOpens
// accepted connections, AttemptFails connects refused or reset before
// they were established, EstabResets established connections reset.
type tcpCounters struct{ ActiveOpens, PassiveOpens, AttemptFails, EstabResets int64 }

func (a tcpCounters) sub(b tcpCounters) tcpCounters {
	return tcpCounters{a.ActiveOpens - b.ActiveOpens, a.PassiveOpens - b.PassiveOpens,
		a.AttemptFails - b.AttemptFails, a.EstabResets - b.EstabResets}
}

func (a tcpCounters) add(b tcpCounters) tcpCounters {
	return tcpCounters{a.ActiveOpens + b.ActiveOpens, a.PassiveOpens + b.PassiveOpens,
		a.AttemptFails + b.AttemptFails, a.EstabResets + b.EstabResets}
}

// readTCP reads the namespace's counters through /proc/thread-self, whose
// net/ is the calling thread's namespace.
func readTCP(ns string) (tcpCounters, error) {
	var raw []byte
	err := netns.Do(ns, func() error {
		var err error
		raw, err = os.ReadFile("/proc/thread-self/net/snmp")
		return err
	})
	if err != nil {
		return tcpCounters{}, err
	}
	var names, vals []string
	for _, l := range strings.Split(string(raw), "\n") {
		if f, ok := strings.CutPrefix(l, "Tcp: "); ok {
			if names == nil {
				names = strings.Fields(f)
			} else {
				vals = strings.Fields(f)
			}
		}
	}
	var c tcpCounters
	for i, n := range names {
		if i >= len(vals) {
			break
		}
		v, _ := strconv.ParseInt(vals[i], 10, 64)
		switch n {
		case "ActiveOpens":
			c.ActiveOpens = v
		case "PassiveOpens":
			c.PassiveOpens = v
		case "AttemptFails":
			c.AttemptFails = v
		case "EstabResets":
			c.EstabResets = v
		}
	}
	return c, nil
}

// handles keeps one netlink handle per namespace for the polls.
type handles map[string]*netlink.Handle

func (h handles) get(ns string) (*netlink.Handle, error) {
	if x, ok := h[ns]; ok {
		return x, nil
	}
	// Both families named: a handle opens a socket of a family it was
	// not made with in the caller's namespace, not in ns.
	nsh, err := vnetns.GetFromName(ns)
	if err != nil {
		return nil, err
	}
	defer nsh.Close()
	x, err := netlink.NewHandleAt(nsh, unix.NETLINK_ROUTE, unix.NETLINK_INET_DIAG)
	if err != nil {
		return nil, err
	}
	h[ns] = x
	return x, nil
}

func (h handles) close() {
	for _, x := range h {
		x.Close()
	}
}

// bgpPeers is the number of distinct peer addresses the namespace has an
// ESTABLISHED TCP connection with on port 179 (either side's).
func (h handles) bgpPeers(ns string) (int, error) {
	x, err := h.get(ns)
	if err != nil {
		return 0, err
	}
	socks, err := x.SocketDiagTCP(unix.AF_INET)
	if err != nil {
		return 0, err
	}
	peers := map[string]bool{}
	for _, s := range socks {
		if s.State != unix.BPF_TCP_ESTABLISHED || (s.ID.SourcePort != 179 && s.ID.DestinationPort != 179) {
			continue
		}
		peers[s.ID.Destination.String()] = true
	}
	return len(peers), nil
}

// learnedRoutes counts the routes of the main table to pod blocks through
// a gateway: what the node learned from the others.
func (h handles) learnedRoutes(ns string) (int, error) {
	x, err := h.get(ns)
	if err != nil {
		return 0, err
	}
	rs, err := x.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rs {
		if r.Dst == nil || r.Gw == nil && len(r.MultiPath) == 0 {
			continue
		}
		if ones, _ := r.Dst.Mask.Size(); ones >= pool.Bits() && pool.Contains(addrOf(r.Dst.IP)) {
			n++
		}
	}
	return n, nil
}

// routeMonitor counts the route messages of a namespace's main table
// (added, replaced or deleted routes) while it runs.
type routeMonitor struct {
	ns   string
	done chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	news int
	dels int
	seen []string // the first few, for the report
	err  error
	// stopped: the errors that closing the subscription causes are not
	// the monitor's
	stopped bool
}

func monitorRoutes(ns string) (*routeMonitor, error) {
	h, err := vnetns.GetFromName(ns)
	if err != nil {
		return nil, err
	}
	m := &routeMonitor{ns: ns, done: make(chan struct{})}
	ch := make(chan netlink.RouteUpdate, 1024)
	err = netlink.RouteSubscribeWithOptions(ch, m.done, netlink.RouteSubscribeOptions{
		Namespace: &h, ErrorCallback: func(err error) {
			m.mu.Lock()
			if !m.stopped && m.err == nil {
				m.err = err
			}
			m.mu.Unlock()
		},
		ReceiveBufferSize: 1 << 20})
	h.Close()
	if err != nil {
		return nil, err
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for u := range ch {
			if u.Table != unix.RT_TABLE_MAIN {
				continue
			}
			m.mu.Lock()
			if u.Type == unix.RTM_DELROUTE {
				m.dels++
			} else {
				m.news++
			}
			if len(m.seen) < 5 {
				m.seen = append(m.seen, fmt.Sprintf("%s %v", map[bool]string{true: "del", false: "new"}[u.Type == unix.RTM_DELROUTE], u.Dst))
			}
			m.mu.Unlock()
		}
	}()
	return m, nil
}

// stop ends the subscription and returns the counts.
func (m *routeMonitor) stop() (news, dels int, seen []string, err error) {
	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
	close(m.done)
	// Closing the socket may not wake a blocked receive: wait a little,
	// the counts are read under the lock either way.
	w := make(chan struct{})
	go func() { m.wg.Wait(); close(w) }()
	select {
	case <-w:
	case <-time.After(time.Second):
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.news, m.dels, m.seen, m.err
}

func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return strings.TrimSpace(string(raw))
	}
	return strings.Join(f[:3], ", ")
}

func addrOf(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}
