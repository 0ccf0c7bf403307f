package e2e

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/netip"
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
