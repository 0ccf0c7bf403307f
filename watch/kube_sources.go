package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"

	"github.com/peeragent/peeragent/state"
)

// sources builds the reflectors of the seven listed kinds.
func (k *Kube) sources(gv schema.GroupVersion, dispatch func(state.Action)) []*cache.Reflector {
	nodes := newKindStore(nodeCodec(), dispatch, k.log)
	nodeLW := &observedLW{client: k.cfg.Client, observe: nodes.observe,
		list: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return k.cfg.Client.Nodes().List(ctx, o)
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
			return k.cfg.Client.Nodes().Watch(ctx, o)
		}}
	return []*cache.Reflector{
		k.calico(gv, "bgppeers", "BGPPeer", newKindStore(peerCodec(), dispatch, k.log)),
		k.calico(gv, "bgpconfigurations", "BGPConfiguration", newKindStore(configCodec(), dispatch, k.log)),
		k.calico(gv, "bgpfilters", "BGPFilter", newKindStore(filterCodec(), dispatch, k.log)),
		k.reflector("nodes", nodeLW, &corev1.Node{}, nodes),
		k.calico(gv, "blockaffinities", "BlockAffinity", newKindStore(affinityCodec(k.cfg.Node), dispatch, k.log)),
		k.calico(gv, "ippools", "IPPool", newKindStore(poolCodec(), dispatch, k.log)),
		k.pods(dispatch),
	}
}

// pods is the reflector of this node's Pods (docs/routes.md "Amendment to
// §1"): listed and watched with the field selector spec.nodeName=N, in
// every namespace, so that the API server sends no other node's Pod.
func (k *Kube) pods(dispatch func(state.Action)) *cache.Reflector {
	store := newKindStore(podCodec(k.cfg.Node), dispatch, k.log)
	sel := fields.OneTermEqualSelector("spec.nodeName", k.cfg.Node).String()
	pods := k.cfg.Client.Pods(metav1.NamespaceAll)
	lw := &observedLW{client: k.cfg.Client, observe: store.observe,
		list: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return pods.List(ctx, o)
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
			o.FieldSelector = sel
			return pods.Watch(ctx, o)
		}}
	return k.reflector("pods", lw, &corev1.Pod{}, store)
}

// calico is the reflector of one Calico resource through the dynamic client.
func (k *Kube) calico(gv schema.GroupVersion, resource, kind string, store interface {
	cache.ReflectorStore
	observe(error)
}) *cache.Reflector {
	res := k.cfg.Dynamic.Resource(gv.WithResource(resource))
	lw := &observedLW{client: k.cfg.Dynamic, observe: store.observe,
		list: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, o)
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
			return res.Watch(ctx, o)
		}}
	expected := &unstructured.Unstructured{}
	expected.SetGroupVersionKind(gv.WithKind(kind))
	return k.reflector(resource, lw, expected, store)
}

// reflector wires a lister-watcher to a store, with no resync.
func (k *Kube) reflector(name string, lw cache.ListerWatcher, expected runtime.Object, store cache.ReflectorStore) *cache.Reflector {
	logger := logr.FromSlogHandler(k.log.Handler())
	return cache.NewReflectorWithOptions(lw, expected, store, cache.ReflectorOptions{
		Name: "peeragent/" + name, Logger: &logger, Backoff: k.backoff,
	})
}

// peerCodec: BGPPeers in either group, by name.
func peerCodec() kindCodec[state.BGPPeer] {
	return kindCodec[state.BGPPeer]{
		decode: calicoDecoder(Peer), object: kindObjectName(state.KindBGPPeer),
		listProblem: "source/" + string(state.KindBGPPeer),
		upsert:      func(v state.BGPPeer) state.Action { return state.PeerUpserted{Peer: v} },
		remove:      func(n string) state.Action { return state.PeerDeleted{Name: n} },
		synced: func(vs []state.BGPPeer) []state.Action {
			return []state.Action{state.SourceSynced{Kind: state.KindBGPPeer, Peers: vs}}
		},
	}
}

// configCodec: BGPConfigurations in either group, by name.
func configCodec() kindCodec[state.BGPConfiguration] {
	return kindCodec[state.BGPConfiguration]{
		decode: calicoDecoder(Config), object: kindObjectName(state.KindBGPConfiguration),
		listProblem: "source/" + string(state.KindBGPConfiguration),
		upsert:      func(v state.BGPConfiguration) state.Action { return state.ConfigUpserted{Config: v} },
		remove:      func(n string) state.Action { return state.ConfigDeleted{Name: n} },
		synced: func(vs []state.BGPConfiguration) []state.Action {
			return []state.Action{state.SourceSynced{Kind: state.KindBGPConfiguration, Configs: vs}}
		},
	}
}

// filterCodec: BGPFilters in either group, by name.
func filterCodec() kindCodec[state.BGPFilter] {
	return kindCodec[state.BGPFilter]{
		decode: calicoDecoder(Filter), object: kindObjectName(state.KindBGPFilter),
		listProblem: "source/" + string(state.KindBGPFilter),
		upsert:      func(v state.BGPFilter) state.Action { return state.FilterUpserted{Filter: v} },
		remove:      func(n string) state.Action { return state.FilterDeleted{Name: n} },
		synced: func(vs []state.BGPFilter) []state.Action {
			return []state.Action{state.SourceSynced{Kind: state.KindBGPFilter, Filters: vs}}
		},
	}
}

// nodeCodec: core Nodes, labels and Calico annotations only.
func nodeCodec() kindCodec[state.Node] {
	return kindCodec[state.Node]{
		object: kindObjectName(state.KindNode), listProblem: "source/" + string(state.KindNode),
		decode: func(obj any) (state.Node, error) {
			n, ok := obj.(*corev1.Node)
			if !ok {
				return state.Node{}, fmt.Errorf("not a Node: %T", obj)
			}
			return Node(n), nil
		},
		upsert: func(v state.Node) state.Action { return state.NodeUpserted{Node: v} },
		remove: func(n string) state.Action { return state.NodeDeleted{Name: n} },
		synced: func(vs []state.Node) []state.Action {
			return []state.Action{state.SourceSynced{Kind: state.KindNode, Nodes: vs}}
		},
	}
}

// affinityCodec: BlockAffinities in either group, this node's only
// (docs/routes.md "Amendment to §1"). Calico's CRDs offer no field
// selector on spec.node, and its hostname-hash label is missing on
// affinities older Calico wrote, so every affinity is listed and another
// node's is dropped here, before anything is dispatched. One whose
// spec.node is empty or not a string is kept: the reducer reports it
// (docs/routes.md §11.1).
func affinityCodec(node string) kindCodec[state.BlockAffinity] {
	return kindCodec[state.BlockAffinity]{
		decode: calicoDecoder(Affinity), object: kindObjectName(state.KindBlockAffinity),
		listProblem: "source/" + string(state.KindBlockAffinity),
		keep: func(obj any) bool {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return false
			}
			n, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "node")
			s, isString := n.(string)
			return !isString || s == "" || s == node
		},
		upsert: func(v state.BlockAffinity) state.Action { return state.BlockAffinityUpserted{Affinity: v} },
		remove: func(n string) state.Action { return state.BlockAffinityDeleted{Name: n} },
		synced: func(vs []state.BlockAffinity) []state.Action {
			return []state.Action{state.SourceSynced{Kind: state.KindBlockAffinity, Affinities: vs}}
		},
	}
}

// poolCodec: IPPools in either group, by name.
func poolCodec() kindCodec[state.IPPool] {
	return kindCodec[state.IPPool]{
		decode: calicoDecoder(Pool), object: kindObjectName(state.KindIPPool),
		listProblem: "source/" + string(state.KindIPPool),
		upsert:      func(v state.IPPool) state.Action { return state.IPPoolUpserted{Pool: v} },
		remove:      func(n string) state.Action { return state.IPPoolDeleted{Name: n} },
		synced: func(vs []state.IPPool) []state.Action {
			return []state.Action{state.SourceSynced{Kind: state.KindIPPool, Pools: vs}}
		},
	}
}

// podCodec: this node's Pods, by NAMESPACE/NAME, only what docs/routes.md
// §8.1 rule 3 reads. The field selector already narrows the watch; a Pod
// of another node is dropped here too (client-go's fakes ignore field
// selectors, and a Pod's nodeName never changes once set).
func podCodec(node string) kindCodec[state.Pod] {
	return kindCodec[state.Pod]{
		object: kindObjectName(state.KindPod), listProblem: "source/" + string(state.KindPod),
		namespaced: true,
		keep: func(obj any) bool {
			p, ok := obj.(*corev1.Pod)
			return ok && p.Spec.NodeName == node
		},
		decode: func(obj any) (state.Pod, error) {
			p, ok := obj.(*corev1.Pod)
			if !ok {
				return state.Pod{}, fmt.Errorf("not a Pod: %T", obj)
			}
			return Pod(p), nil
		},
		upsert: func(v state.Pod) state.Action { return state.PodUpserted{Pod: v} },
		remove: func(key string) state.Action {
			ns, name, _ := strings.Cut(key, "/")
			return state.PodDeleted{Namespace: ns, Name: name}
		},
		synced: func(vs []state.Pod) []state.Action {
			return []state.Action{state.SourceSynced{Kind: state.KindPod, Pods: vs}}
		},
	}
}

func kindObjectName(k state.Kind) func(string) string {
	return func(name string) string { return string(k) + "/" + name }
}

// calicoDecoder decodes an unstructured Calico object into its v3 type P
// and converts it.
func calicoDecoder[P any, T any](conv func(*P) T) func(any) (T, error) {
	return func(obj any) (T, error) {
		var p P
		raw, unknown, err := decodeCalico(obj, &p)
		if err != nil {
			var zero T
			return zero, err
		}
		return withNewer(conv(&p), raw, unknown), nil
	}
}

// decodeCalico decodes through JSON, as a typed client would, and not with
// runtime.DefaultUnstructuredConverter: the converter silently wraps
// out-of-range integers (asNumber 5000000000 becomes 705032704, ttlSecurity
// 300 becomes 44), turning bad input into wrong input.
// Unknown fields are returned (decodeCalicoJSON), not dropped, with the
// JSON for withNewer.
func decodeCalico(obj any, into any) ([]byte, []string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil, fmt.Errorf("decode: unexpected %T", obj)
	}
	b, err := u.MarshalJSON()
	if err != nil {
		return nil, nil, fmt.Errorf("decode: %w", err)
	}
	unknown, err := decodeCalicoJSON(b, into)
	if err != nil {
		return nil, nil, errors.New(decodeReason(u, err))
	}
	return b, unknown, nil
}

// decodeReason names the offending field and its value when it can
// (Calico's ASNumber hides the value behind a misleading "of type string").
func decodeReason(u *unstructured.Unstructured, err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" {
		return "decode: " + err.Error()
	}
	if v, found, _ := unstructured.NestedFieldNoCopy(u.Object, strings.Split(te.Field, ".")...); found {
		return fmt.Sprintf("invalid %s: %v", te.Field, v)
	}
	return fmt.Sprintf("invalid %s: %s", te.Field, te.Value)
}

// observedLW is a lister-watcher that reports the outcome of each call
// (to turn a 403 into a problem) and tells the reflector whether its
// client supports watch-list (client-go's fakes do not).
type observedLW struct {
	client  any
	observe func(error)
	list    func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watch   func(context.Context, metav1.ListOptions) (kwatch.Interface, error)
}

// ListWithContext implements cache.ListerWatcherWithContext.
func (l *observedLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	obj, err := l.list(ctx, o)
	l.observe(err)
	return obj, err
}

// WatchWithContext implements cache.ListerWatcherWithContext.
func (l *observedLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
	w, err := l.watch(ctx, o)
	l.observe(err)
	return w, err
}

// List implements cache.ListerWatcher.
func (l *observedLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), o)
}

// Watch implements cache.ListerWatcher.
func (l *observedLW) Watch(o metav1.ListOptions) (kwatch.Interface, error) {
	return l.WatchWithContext(context.Background(), o)
}

// IsWatchListSemanticsUnSupported lets client-go's fake clients opt out of
// watch-list, as they do for their own informers.
func (l *observedLW) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(l.client)
}

var _ cache.ListerWatcherWithContext = (*observedLW)(nil)
