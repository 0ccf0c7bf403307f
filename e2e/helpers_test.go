package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/daemon"
	"github.com/peeragent/peeragent/internal/testrig/fakespeaker"
	"github.com/peeragent/peeragent/state"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// poll calls cond every interval until it holds (true) or ctx ends
// (false, unless cond holds at that last call).
func poll(ctx context.Context, every time.Duration, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return cond()
		case <-time.After(every):
		}
	}
	return true
}

// freePort is a TCP port free on host.
func freePort(t testing.TB, host string) int {
	t.Helper()
	return daemon.MustFreePort(t, "e2e", netip.MustParseAddr(host))
}

// freeAddr is host:port with a port free on host.
func freeAddr(t testing.TB, host string) string {
	t.Helper()
	return net.JoinHostPort(host, strconv.Itoa(freePort(t, host)))
}

// benchPort is a port free on 127.0.0.1, as clustergen takes it.
func benchPort(b testing.TB) int32 { return int32(freePort(b, "127.0.0.1")) }

// recorder records every effect the loop hands the speaker executor, then
// passes them to inner, or without one confirms them (fakespeaker.Ack).
type recorder struct {
	inner effects.Executor
	mu    sync.Mutex
	seen  []effects.Effect
}

func (r *recorder) Execute(ctx context.Context, effs []effects.Effect) []state.Action {
	r.mu.Lock()
	r.seen = append(r.seen, effs...)
	r.mu.Unlock()
	if r.inner != nil {
		return r.inner.Execute(ctx, effs)
	}
	return fakespeaker.Ack(effs)
}

// mark is how many effects were recorded so far.
func (r *recorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// since is the effects recorded after mark m.
func (r *recorder) since(m int) []effects.Effect {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen[m:])
}

// strings is since(m) as the effects' one-line forms.
func (r *recorder) strings(m int) []string {
	var out []string
	for _, e := range r.since(m) {
		out = append(out, e.String())
	}
	return out
}

// nodeYAML is the manifest of the Node name with annotations (the entries
// of a YAML flow map).
func nodeYAML(name, annotations string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n  annotations: {%s}\n", name, annotations)
}

// defaultPoolYAML is the IPPool 10.244.0.0/16, without encapsulation, as
// a YAML document of a manifest directory.
const defaultPoolYAML = `apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata: {name: default-pool}
spec: {cidr: 10.244.0.0/16, ipipMode: Never, vxlanMode: Never}
`

// affinityYAML is a document separator, then node-a's confirmed
// BlockAffinity of cidr, named name, as a YAML document.
func affinityYAML(name, cidr string) string {
	return fmt.Sprintf("---\napiVersion: crd.projectcalico.org/v1\nkind: BlockAffinity\nmetadata: {name: %s}\n"+
		"spec: {node: node-a, cidr: %q, state: confirmed, deleted: \"false\"}\n", name, cidr)
}

// requireNetns skips the test loudly (fails it under CI=true) unless it
// can create network namespaces: root, and ip (iproute2).
func requireNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		netnsDep.Missing(t, "!!! NOT ROOT: "+t.Name()+" creates network namespaces.")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		netnsDep.Missing(t, "!!! NO ip (iproute2): "+t.Name()+" needs it to create network namespaces.")
	}
}

// newNS makes the network namespace name, the test's own (deleted when it
// ends), with lo up.
func newNS(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	ipCmd(t, ctx, "netns", "add", name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v\n%s", name, err, out)
		}
	})
	ipCmd(t, ctx, "-n", name, "link", "set", "lo", "up")
	return name
}

// nsSuffix makes the names of a test's namespaces its own.
func nsSuffix() string { return fmt.Sprintf("%06x", rand.Uint32()&0xffffff) }

// vethPair makes two namespaces (newNS), peeragent-t-TAGa-SUFFIX and
// peeragent-t-TAGb-SUFFIX, joined by a veth pair devA (in A) and devB (in
// B). The pair is created inside A with its peer in B: nothing appears in
// the test's own namespace, not even for a moment. The devices are down,
// without addresses.
func vethPair(t *testing.T, ctx context.Context, tag, devA, devB string) (nsA, nsB string) {
	t.Helper()
	suffix := nsSuffix()
	nsA, nsB = newNS(t, ctx, "peeragent-t-"+tag+"a-"+suffix), newNS(t, ctx, "peeragent-t-"+tag+"b-"+suffix)
	ipCmd(t, ctx, "-n", nsA, "link", "add", devA, "type", "veth", "peer", "name", devB, "netns", nsB)
	return nsA, nsB
}
