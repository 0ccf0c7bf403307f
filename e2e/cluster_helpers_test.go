package e2e

import (
	"bytes"
	"context"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/fakespeaker"
	"github.com/peeragent/peeragent/state"
)

// --- wrappers -------------------------------------------------------------

// clusterSpeaker records every effect the loop hands the speaker executor,
// then passes them to the real one, or acknowledges them (the fake).
type clusterSpeaker struct {
	inner effects.Executor
	mu    sync.Mutex
	seen  []string
}

func (s *clusterSpeaker) Execute(ctx context.Context, effs []effects.Effect) []state.Action {
	s.mu.Lock()
	for _, e := range effs {
		s.seen = append(s.seen, e.String())
	}
	s.mu.Unlock()
	if s.inner != nil {
		return s.inner.Execute(ctx, effs)
	}
	return fakespeaker.Ack(effs)
}

func (s *clusterSpeaker) mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func (s *clusterSpeaker) since(m int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen[m:])
}

// clusterWatches records the loop's Secret and service watch calls and
// passes them on to the kube source.
type clusterWatches struct {
	inner agent.SecretWatcher
	svcs  agent.ServiceWatcher
	mu    sync.Mutex
	calls []string
	on    map[string]bool
}

func (w *clusterWatches) Watch(name string) {
	w.record("watch "+name, name, true)
	w.inner.Watch(name)
}

func (w *clusterWatches) Unwatch(name string) {
	w.record("unwatch "+name, name, false)
	w.inner.Unwatch(name)
}

func (w *clusterWatches) WatchServices() {
	w.record("watch-services", "", false)
	w.svcs.WatchServices()
}

func (w *clusterWatches) UnwatchServices() {
	w.record("unwatch-services", "", false)
	w.svcs.UnwatchServices()
}

func (w *clusterWatches) record(call, name string, on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.on == nil {
		w.on = map[string]bool{}
	}
	w.calls = append(w.calls, call)
	w.on[name] = on
}

func (w *clusterWatches) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.calls)
}

func (w *clusterWatches) watching(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.on[name]
}

// clusterSeen counts the actions the loop reduces, by name (a complete
// list by kind too), and the settle markers apart.
type clusterSeen struct {
	mu     sync.Mutex
	counts map[string]int
	marker int
}

func (o *clusterSeen) observe(a state.Action) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch a := a.(type) {
	case state.InputProblemsReported:
		if a.Source == clusterMarker {
			o.marker++
			return
		}
	case state.SourceSynced:
		o.counts["sourceSynced/"+string(a.Kind)]++
		return
	}
	o.counts[a.ActionName()]++
}

func (o *clusterSeen) markers() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.marker
}

func (o *clusterSeen) snapshot() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.counts)
}

// clusterLogBuf collects the agent's log: GoBGP's goroutines outlive the
// test, so nothing goes to t.Log directly.
type clusterLogBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *clusterLogBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *clusterLogBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// --- small helpers ----------------------------------------------------------

// clusterPoll polls cond every 20 ms until it holds (true), limit passes
// or ctx ends (false).
func clusterPoll(ctx context.Context, limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return cond()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// clusterExpect checks that effs are exactly the effects named, each by
// the start of its text ("add-peer 127.0.0.10"), in any order. Every
// neighbor has an export policy (docs/routes.md §8.3, appendix C, C7), so
// a neighbor added comes with its set-policy and a deleted one with its
// delete-policy.
func clusterExpect(t *testing.T, what string, effs []string, want ...string) {
	t.Helper()
	if !clusterSameKinds(effs, want...) {
		t.Errorf("%s: speaker effects %q, want exactly %q", what, effs, want)
	}
}

func clusterSameKinds(effs []string, want ...string) bool {
	if len(effs) != len(want) {
		return false
	}
	left := slices.Clone(effs)
	for _, w := range want {
		i := slices.IndexFunc(left, func(e string) bool { return strings.HasPrefix(e, w+" ") || e == w })
		if i < 0 {
			return false
		}
		left = slices.Delete(left, i, i+1)
	}
	return true
}

func clusterNodeLabel(s state.State, node, key string) string {
	n, ok := s.Inputs.Nodes.Get(node)
	if !ok || n.Spec == nil {
		return ""
	}
	return n.Spec.Labels[key]
}

func clusterOrNone(parts []string) string {
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// clusterFreePort is a TCP port free on 127.0.0.1 for the speaker.
func clusterFreePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", net.JoinHostPort(clusterAddr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
