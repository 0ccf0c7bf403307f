package main

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/peeragent/peeragent/internal/testrig/netns"
)

// nsPrefix starts the name of every namespace the tool makes; -cleanup
// removes those whose owner (the pid in the name) is gone.
const nsPrefix = "meshsim-"

// node is one simulated Kubernetes node: a namespace with one veth end on
// the shared bridge.
type node struct {
	index int // 1-based
	name  string
	ns    string
	addr  netip.Addr
	mac   string
	block netip.Prefix
}

// topology is the hub namespace holding the bridge, and the nodes.
type topology struct {
	tag   string
	hub   string
	nodes []*node
}

// pool is the IPPool every node's block comes from; subnet the nodes' link.
var (
	pool   = netip.MustParsePrefix("10.244.0.0/16")
	subnet = netip.MustParsePrefix("10.200.0.0/24")
)

func newTopology(n int, run string) *topology {
	t := &topology{tag: fmt.Sprintf("%s%d-%s", nsPrefix, os.Getpid(), run)}
	t.hub = t.tag + "-hub"
	for i := 1; i <= n; i++ {
		t.nodes = append(t.nodes, &node{
			index: i,
			name:  fmt.Sprintf("node-%d", i),
			ns:    fmt.Sprintf("%s-%d", t.tag, i),
			addr:  netip.AddrFrom4([4]byte{10, 200, 0, byte(i)}),
			mac:   fmt.Sprintf("02:4d:53:00:%02x:%02x", i>>8, i&0xff),
			block: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(i), 0}), 26),
		})
	}
	return t
}

// create makes the hub with its bridge, then each node's namespace, veth,
// address and a permanent neighbor entry for every other node: the kernel's
// neighbor table is shared by all namespaces and garbage-collected past
// gc_thresh3, which permanent entries do not count against.
func (t *topology) create(ctx context.Context, dir string) error {
	if err := ipCmd(ctx, "netns", "add", t.hub); err != nil {
		return err
	}
	hub := []string{
		"link add br0 type bridge",
		"link set br0 up",
		"link set lo up",
	}
	for _, nd := range t.nodes {
		if err := ipCmd(ctx, "netns", "add", nd.ns); err != nil {
			return err
		}
		if err := disableIPv6(nd.ns); err != nil {
			return err
		}
		hub = append(hub, fmt.Sprintf("link add v%d type veth peer name eth0 netns %s", nd.index, nd.ns),
			fmt.Sprintf("link set v%d master br0", nd.index), fmt.Sprintf("link set v%d up", nd.index))
	}
	if err := disableIPv6(t.hub); err != nil {
		return err
	}
	if err := ipBatch(ctx, dir, t.hub, hub); err != nil {
		return err
	}
	for _, nd := range t.nodes {
		lines := []string{
			"link set lo up",
			"link set eth0 address " + nd.mac,
			fmt.Sprintf("addr add %s/%d dev eth0", nd.addr, subnet.Bits()),
			"link set eth0 up",
		}
		for _, o := range t.nodes {
			if o != nd {
				lines = append(lines, fmt.Sprintf("neigh replace %s lladdr %s dev eth0 nud permanent", o.addr, o.mac))
			}
		}
		if err := ipBatch(ctx, dir, nd.ns, lines); err != nil {
			return err
		}
	}
	return nil
}

// destroy deletes every namespace of the topology that exists; deleting a
// namespace removes its veth ends and the bridge.
func (t *topology) destroy() error {
	var errs []string
	names := []string{t.hub}
	for _, nd := range t.nodes {
		names = append(names, nd.ns)
	}
	for _, ns := range names {
		if _, err := os.Stat(filepath.Join("/var/run/netns", ns)); err != nil {
			continue
		}
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Sprintf("ip netns del %s: %v: %s", ns, err, bytes.TrimSpace(out)))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// disableIPv6 keeps the link quiet (no link-local addresses, router or
// neighbor solicitations): the mesh is IPv4. /proc/sys/net is the opening
// thread's namespace, so this writes the namespace's sysctl, not the host's.
func disableIPv6(ns string) error {
	return netns.Do(ns, func() error {
		for _, k := range []string{"all", "default"} {
			if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+k+"/disable_ipv6", []byte("1"), 0o644); err != nil {
				return fmt.Errorf("namespace %s: %w", ns, err)
			}
		}
		return nil
	})
}

func ipCmd(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// ipBatch runs lines as one `ip -n NS -batch FILE`.
func ipBatch(ctx context.Context, dir, ns string, lines []string) error {
	f := filepath.Join(dir, ns+".ip")
	if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	defer os.Remove(f)
	return ipCmd(ctx, "-n", ns, "-batch", f)
}

// cleanupStale removes the namespaces and work directories of earlier runs
// whose process is gone (a run killed with SIGKILL cannot clean up after
// itself): both are named meshsim-PID-….
func cleanupStale() ([]string, error) {
	var removed []string
	ents, err := os.ReadDir("/var/run/netns")
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for _, e := range ents {
		if !stale(e.Name()) {
			continue
		}
		if out, err := exec.Command("ip", "netns", "del", e.Name()).CombinedOutput(); err != nil {
			return removed, fmt.Errorf("ip netns del %s: %v: %s", e.Name(), err, bytes.TrimSpace(out))
		}
		removed = append(removed, e.Name())
	}
	dirs, err := os.ReadDir(os.TempDir())
	if err != nil {
		return removed, err
	}
	for _, e := range dirs {
		if !e.IsDir() || !stale(e.Name()) {
			continue
		}
		p := filepath.Join(os.TempDir(), e.Name())
		if err := os.RemoveAll(p); err != nil {
			return removed, err
		}
		removed = append(removed, p)
	}
	return removed, nil
}

// stale: the name is meshsim-PID-… and no process PID runs.
func stale(name string) bool {
	rest, ok := strings.CutPrefix(name, nsPrefix)
	if !ok {
		return false
	}
	var pid int
	if _, err := fmt.Sscanf(rest, "%d-", &pid); err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return os.IsNotExist(err)
}
