package e2e

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/state"
)

// --- wrappers -------------------------------------------------------------

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

// --- small helpers ----------------------------------------------------------

// clusterPoll polls cond every 20 ms until it holds (true), limit passes
// or ctx ends (false).
func clusterPoll(ctx context.Context, limit time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return poll(ctx, 20*time.Millisecond, cond)
}

// waitNodeStatus polls the CalicoNodeStatus name (of group's API) until
// ok accepts its status, within limit, and returns the last status read
// (nil before there is one) and whether ok accepted it.
func (e *clusterEnv) waitNodeStatus(group, name string, limit time.Duration, ok func(status map[string]any) bool) (map[string]any, bool) {
	var status map[string]any
	done := clusterPoll(e.ctx, limit, func() bool {
		u, err := e.dyn.Resource(clusterCalicoResource(group, "CalicoNodeStatus")).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		status, _ = u.Object["status"].(map[string]any)
		return ok(status)
	})
	return status, done
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
