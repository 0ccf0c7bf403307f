package watch

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	kwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/peeragent/peeragent/state"
)

const testNS = "calico-vpp-dataplane"

// testNodeName is the node the test Kube runs on.
const testNodeName = "node-a"

// actionRecorder collects dispatched actions; waiters are woken on each one.
type actionRecorder struct {
	mu      sync.Mutex
	actions []state.Action
	changed chan struct{}
}

func newActionRecorder() *actionRecorder { return &actionRecorder{changed: make(chan struct{}, 1)} }

func (r *actionRecorder) dispatch(a state.Action) {
	r.mu.Lock()
	r.actions = append(r.actions, a)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// mark is the number of actions so far, to look only at later ones.
func (r *actionRecorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.actions)
}

// since returns a copy of the actions from index i on.
func (r *actionRecorder) since(i int) []state.Action {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= len(r.actions) {
		return nil
	}
	return append([]state.Action(nil), r.actions[i:]...)
}

// waitFor blocks until an action from index from on satisfies match, and
// returns it with its index; it fails the test after a deadline.
func (r *actionRecorder) waitFor(t *testing.T, from int, what string, match func(state.Action) bool) (state.Action, int) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second) // a relist waits out the reflector's backoff: 10 s was missed under load
	defer deadline.Stop()
	for {
		for i, a := range r.since(from) {
			if match(a) {
				return a, from + i
			}
		}
		select {
		case <-r.changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; got %s", what, describeActions(r.since(from)))
		}
	}
}

// nextAction waits for the first action of type T from index from on matching
// match (nil: any), and returns it and the index after it.
func nextAction[T state.Action](t *testing.T, r *actionRecorder, from int, what string, match func(T) bool) (T, int) {
	t.Helper()
	a, i := r.waitFor(t, from, what, func(a state.Action) bool {
		v, ok := a.(T)
		return ok && (match == nil || match(v))
	})
	return a.(T), i + 1
}

func describeActions(as []state.Action) string {
	s := ""
	for _, a := range as {
		s += fmt.Sprintf("\n  %s %+v", a.ActionName(), a)
	}
	if s == "" {
		return "nothing"
	}
	return s
}

// kubeFakes are the clients a test Kube reads.
type kubeFakes struct {
	client *fake.Clientset
	dyn    *dynfake.FakeDynamicClient
	disc   discovery.DiscoveryInterface // nil unless a test needs group auto
	opened *watchCounter
}

// watchCounter counts the watches the fakes opened, per resource. The
// fake tracker drops changes made before a watch is registered (a real
// API server replays them from the resourceVersion), so tests wait for
// the watch before changing anything.
type watchCounter struct {
	mu      sync.Mutex
	count   map[string]int
	changed chan struct{}
}

// reactor opens the watch as the fakes' default reactor does, then counts it.
func (c *watchCounter) reactor(tracker k8stesting.ObjectTracker) k8stesting.WatchReactionFunc {
	return func(a k8stesting.Action) (bool, kwatch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := a.(k8stesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		w, err := tracker.Watch(a.GetResource(), a.GetNamespace(), opts)
		if err != nil {
			return false, nil, err
		}
		c.mu.Lock()
		c.count[a.GetResource().Resource]++
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
		return true, w, nil
	}
}

// wait blocks until n watches of each resource have been opened.
func (c *watchCounter) wait(t *testing.T, n int, resources ...string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		done, ch := true, c.changed
		for _, r := range resources {
			done = done && c.count[r] >= n
		}
		c.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %d watches of %v", n, resources)
		}
	}
}

var calicoResources = map[string]string{
	"bgppeers": "BGPPeerList", "bgpconfigurations": "BGPConfigurationList", "bgpfilters": "BGPFilterList",
	"blockaffinities": "BlockAffinityList", "ippools": "IPPoolList",
}

// newKubeFakes registers the Calico list kinds in both groups.
func newKubeFakes(core []runtime.Object, calico ...runtime.Object) kubeFakes {
	kinds := map[schema.GroupVersionResource]string{}
	for _, g := range []string{GroupCRD, GroupV3} {
		gv, _ := schema.ParseGroupVersion(g)
		for res, list := range calicoResources {
			kinds[gv.WithResource(res)] = list
		}
	}
	f := kubeFakes{
		client: fake.NewClientset(core...),
		dyn:    dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds, calico...),
		opened: &watchCounter{count: map[string]int{}, changed: make(chan struct{})},
	}
	f.client.PrependWatchReactor("*", f.opened.reactor(f.client.Tracker()))
	f.dyn.PrependWatchReactor("*", f.opened.reactor(f.dyn.Tracker()))
	return f
}

// startKube runs a Kube over f until the test ends; Run's return is awaited.
func startKube(t *testing.T, f kubeFakes, group string, before func(*Kube)) (*Kube, *actionRecorder) {
	t.Helper()
	group, err := ResolveGroup(f.disc, group) // as cmd/peeragent does before NewKube
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewKube(KubeConfig{Client: fakeClient(f.client), Dynamic: f.dyn, Group: group, Namespace: testNS, Node: testNodeName,
		Log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	k.backoff = &wait.Backoff{Duration: 10 * time.Millisecond, Cap: 100 * time.Millisecond, Factor: 2, Steps: 10}
	if before != nil {
		before(k)
	}
	rec := newActionRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx, rec.dispatch) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return k, rec
}

// calicoObject is an unstructured Calico object of the given group.
func calicoObject(group, kind, name, rv string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(group)
	u.SetKind(kind)
	u.SetName(name)
	u.SetResourceVersion(rv)
	return u
}

func calicoGVR(group, resource string) schema.GroupVersionResource {
	gv, _ := schema.ParseGroupVersion(group)
	return gv.WithResource(resource)
}

func testNode(name, rv string, labels map[string]string, ipv4 string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv, Labels: labels,
		Annotations: map[string]string{AnnotationIPv4: ipv4}}}
}

func testSecret(name, rv string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, ResourceVersion: rv},
		Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func bgCtx() context.Context { return context.Background() }

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// waitSynced waits for the first list of every gating kind, and for
// their watches, and returns the index after the last list.
func waitSynced(t *testing.T, f kubeFakes, r *actionRecorder) int {
	t.Helper()
	end := waitLists(t, r)
	f.opened.wait(t, 1, "bgppeers", "bgpconfigurations", "bgpfilters", "nodes", "blockaffinities", "ippools", "pods")
	return end
}

// waitLists waits for the first list of every gating kind and returns the
// index after the last of them.
func waitLists(t *testing.T, r *actionRecorder) int {
	t.Helper()
	end := 0
	for _, k := range state.SyncedKinds {
		_, i := nextAction(t, r, 0, "list of "+string(k), func(a state.SourceSynced) bool { return a.Kind == k })
		end = max(end, i)
	}
	return end
}
