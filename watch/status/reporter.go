package status

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/peeragent/peeragent/state"
)

// Config is what a Reporter needs.
type Config struct {
	Dynamic  dynamic.Interface
	Group    string // resolved: crd.projectcalico.org/v1 or projectcalico.org/v3
	Node     string // this node: the CalicoNodeStatus objects whose spec.node it is
	Recorder Recorder
	// Events, when Recorder is nil: where the Reporter's own recorder
	// writes Events (source component peeragent, host Node), such as
	// watch.TypedClient's Events(); Run flushes it when it returns.
	Events   EventSink
	Version  string        // the agent's version, shown as the daemons' version
	Log      *slog.Logger  // nil: slog.Default()
	EventGap time.Duration // minimum time between two batches of Events on one object; 0: DefaultEventGap
}

// DefaultEventGap is the minimum time between two batches of Events on one
// object: a flapping problem makes one Event a minute, not one a flap.
const DefaultEventGap = time.Minute

// Reporter writes CalicoNodeStatus and Events from the latest published State.
type Reporter struct {
	cfg    Config
	gvr    schema.GroupVersionResource
	log    *slog.Logger
	events *eventLog
	nodes  *nodeStatuses
	// own is the recorder of Config.Events (nil: Config.Recorder).
	own *sinkRecorder

	mu     sync.Mutex
	latest *state.State
	wake   chan struct{}
}

// New checks cfg; nothing talks to the API server before Run.
func New(cfg Config) (*Reporter, error) {
	if cfg.Dynamic == nil || (cfg.Recorder == nil && cfg.Events == nil) || cfg.Node == "" {
		return nil, errors.New("status reporter: a dynamic client, a recorder or an Events client, and the node name are required")
	}
	gv, err := schema.ParseGroupVersion(cfg.Group)
	if err != nil || gv.Group == "" {
		return nil, fmt.Errorf("status reporter: API group %q: want a group/version", cfg.Group)
	}
	if cfg.EventGap <= 0 {
		cfg.EventGap = DefaultEventGap
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	var own *sinkRecorder
	if cfg.Recorder == nil {
		own = newSinkRecorder(cfg.Events, corev1.EventSource{Component: "peeragent", Host: cfg.Node}, log)
		cfg.Recorder = own
	}
	r := &Reporter{cfg: cfg, gvr: gv.WithResource("caliconodestatuses"), log: log,
		events: newEventLog(cfg.Recorder, cfg.Group, cfg.EventGap), wake: make(chan struct{}, 1), own: own}
	r.nodes = &nodeStatuses{client: cfg.Dynamic.Resource(r.gvr), node: cfg.Node, version: cfg.Version,
		log: log, written: map[string]time.Time{}}
	return r, nil
}

// Observe is an agent.LoopConfig Published observer: it keeps s as the
// latest State and wakes Run, never blocking the loop.
func (r *Reporter) Observe(s state.State) {
	r.mu.Lock()
	r.latest = &s
	r.mu.Unlock()
	r.poke()
}

func (r *Reporter) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Reporter) current() *state.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.latest
}

// Run watches this cluster's CalicoNodeStatus objects and reports the
// latest State whenever it or they change, until ctx ends; then it flushes
// the Events its own recorder holds (Config.Events).
func (r *Reporter) Run(ctx context.Context) {
	if r.own != nil {
		defer r.own.shutdown()
	}
	inf := statusInformer(r.cfg.Dynamic, r.gvr)
	poke := func(any) { r.poke() }
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: poke,
		UpdateFunc: func(_, o any) { r.poke() }, DeleteFunc: poke}); err != nil {
		r.log.Error("status reporter: watch CalicoNodeStatus", "error", err)
		return
	}
	go inf.RunWithContext(ctx)
	r.nodes.store = inf.GetStore()
	// Until the informer has synced, a wake finds !HasSynced and is lost:
	// the informer's handlers poke before HasSynced turns true, and a State
	// observed meanwhile would not be reported until the next one.
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return
	}
	r.poke()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-timer.C:
		}
		s := r.current()
		if s == nil || !s.AllSynced() || !inf.HasSynced() {
			continue // reported once every source listed: no problem of a half-read cluster
		}
		now := time.Now()
		next := earliest(r.events.step(now, s.AllProblems()), r.nodes.write(ctx, now, *s))
		if !next.IsZero() {
			timer.Reset(next.Sub(now))
		}
	}
}

// statusInformer is dynamicinformer.NewFilteredDynamicInformer's informer
// (every namespace, no resync, no indexer), made here: that package
// imports client-go's informers, which link the full clientset
// (docs/performance.md "What the binary maps").
func statusInformer(client dynamic.Interface, gvr schema.GroupVersionResource) cache.SharedIndexInformer {
	res := client.Resource(gvr)
	return cache.NewSharedIndexInformerWithOptions(
		cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListFunc: func(o metav1.ListOptions) (runtime.Object, error) { return res.List(context.Background(), o) },
			WatchFunc: func(o metav1.ListOptions) (kwatch.Interface, error) {
				return res.Watch(context.Background(), o)
			},
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return res.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
				return res.Watch(ctx, o)
			},
		}, client),
		&unstructured.Unstructured{},
		cache.SharedIndexInformerOptions{Indexers: cache.Indexers{}, ObjectDescription: gvr.String()})
}

// earliest of two due times, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
