package watch

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/peeragent/peeragent/state"
)

// serviceWatch is the wanted state of the Service and EndpointSlice
// watches (docs/routes.md §8.4); cancel and the stores are set while their
// reflectors run.
type serviceWatch struct {
	wanted bool
	cancel context.CancelFunc
	svcs   *kindStore[state.Service]
	slices *kindStore[state.EndpointSlice]
}

// WatchServices starts the list and watch of every Service and
// EndpointSlice (all namespaces), asked for by the WatchServices effect
// while some service range is configured. Idempotent; safe before Run
// and from any goroutine.
func (k *Kube) WatchServices() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.svc.wanted {
		return
	}
	k.svc.wanted = true
	k.log.Debug("service watches wanted")
	if k.run != nil {
		k.startServices()
	}
}

// UnwatchServices stops those watches: once it returns, nothing more is
// dispatched from them (the reducer forgets what they delivered itself).
// Idempotent; safe before Run and from any goroutine.
func (k *Kube) UnwatchServices() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.svc.wanted {
		return
	}
	k.svc.wanted = false
	k.svc.stop()
	k.log.Debug("service watches stopped")
}

// startServices runs the two reflectors under the running scope; k.mu is held.
func (k *Kube) startServices() {
	ctx, cancel := context.WithCancel(k.run.ctx)
	w := &k.svc
	w.cancel = cancel
	w.svcs = newKindStore(serviceCodec(), k.run.dispatch, k.log)
	w.slices = newKindStore(sliceCodec(), k.run.dispatch, k.log)
	svcs := k.cfg.Client.Services(metav1.NamespaceAll)
	svcLW := &observedLW{client: k.cfg.Client, observe: w.svcs.observe,
		list: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return svcs.List(ctx, o)
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
			return svcs.Watch(ctx, o)
		}}
	slices := k.cfg.Client.EndpointSlices(metav1.NamespaceAll)
	sliceLW := &observedLW{client: k.cfg.Client, observe: w.slices.observe,
		list: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return slices.List(ctx, o)
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
			return slices.Watch(ctx, o)
		}}
	rs := k.reflector("services", svcLW, &corev1.Service{}, w.svcs)
	rsl := k.reflector("endpointslices", sliceLW, &discoveryv1.EndpointSlice{}, w.slices)
	k.run.wg.Go(func() { rs.RunWithContext(ctx) })
	k.run.wg.Go(func() { rsl.RunWithContext(ctx) })
}

// stop ends the reflectors, if running, and silences their stores.
func (w *serviceWatch) stop() {
	if w.cancel == nil {
		return
	}
	w.cancel()
	w.svcs.stop()
	w.slices.stop()
	w.cancel, w.svcs, w.slices = nil, nil, nil
}

func cutKey(key string) (ns, name string) {
	ns, name, _ = strings.Cut(key, "/")
	return ns, name
}

func serviceCodec() kindCodec[state.Service] {
	return kindCodec[state.Service]{
		object: kindObjectName(state.KindService), listProblem: "source/" + string(state.KindService),
		namespaced: true,
		decode: func(obj any) (state.Service, error) {
			s, ok := obj.(*corev1.Service)
			if !ok {
				return state.Service{}, fmt.Errorf("not a Service: %T", obj)
			}
			return Service(s), nil
		},
		upsert: func(v state.Service) state.Action { return state.ServiceUpserted{Service: v} },
		remove: func(key string) state.Action {
			ns, name := cutKey(key)
			return state.ServiceDeleted{Namespace: ns, Name: name}
		},
		synced: func(vs []state.Service) []state.Action {
			return []state.Action{state.SourceSynced{Kind: state.KindService, Services: vs}}
		},
	}
}

func sliceCodec() kindCodec[state.EndpointSlice] {
	return kindCodec[state.EndpointSlice]{
		object: kindObjectName(state.KindEndpointSlice), listProblem: "source/" + string(state.KindEndpointSlice),
		namespaced: true,
		decode: func(obj any) (state.EndpointSlice, error) {
			e, ok := obj.(*discoveryv1.EndpointSlice)
			if !ok {
				return state.EndpointSlice{}, fmt.Errorf("not an EndpointSlice: %T", obj)
			}
			return EndpointSlice(e), nil
		},
		upsert: func(v state.EndpointSlice) state.Action { return state.EndpointSliceUpserted{Slice: v} },
		remove: func(key string) state.Action {
			ns, name := cutKey(key)
			return state.EndpointSliceDeleted{Namespace: ns, Name: name}
		},
		synced: func(vs []state.EndpointSlice) []state.Action {
			return []state.Action{state.SourceSynced{Kind: state.KindEndpointSlice, EndpointSlices: vs}}
		},
	}
}

// Service converts a Service: only what docs/routes.md §8.4 reads.
func Service(s *corev1.Service) state.Service {
	out := state.Service{Namespace: s.Namespace, Name: s.Name, Type: string(s.Spec.Type),
		ClusterIPs: s.Spec.ClusterIPs, ExternalIPs: s.Spec.ExternalIPs, LoadBalancerIP: s.Spec.LoadBalancerIP,
		ExternalTrafficPolicy: string(s.Spec.ExternalTrafficPolicy)}
	if len(out.ClusterIPs) == 0 && s.Spec.ClusterIP != "" {
		out.ClusterIPs = []string{s.Spec.ClusterIP}
	}
	for _, f := range s.Spec.IPFamilies {
		out.IPFamilies = append(out.IPFamilies, string(f))
	}
	for _, in := range s.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			out.IngressIPs = append(out.IngressIPs, in.IP)
		}
	}
	return out
}

// EndpointSlice converts an EndpointSlice: its service-name label, address
// type, and each endpoint's node and readiness (docs/routes.md §8.4).
func EndpointSlice(e *discoveryv1.EndpointSlice) state.EndpointSlice {
	out := state.EndpointSlice{Namespace: e.Namespace, Name: e.Name, ServiceName: e.Labels[discoveryv1.LabelServiceName],
		AddressType: string(e.AddressType)}
	for _, ep := range e.Endpoints {
		x := state.Endpoint{Ready: ep.Conditions.Ready}
		if ep.NodeName != nil {
			x.NodeName = *ep.NodeName
		}
		out.Endpoints = append(out.Endpoints, x)
	}
	return out
}
