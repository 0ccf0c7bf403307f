package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	kwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Lister lists and watches one resource: what a reflector needs of it.
type Lister[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (kwatch.Interface, error)
}

// Client is what the Kubernetes source reads of the built-in API groups:
// core/v1 Nodes, Pods, Secrets and Services, and discovery/v1
// EndpointSlices (the Calico kinds go through the dynamic client).
// TypedClient is the agent's; tests adapt client-go's fake clientset.
type Client interface {
	Nodes() Lister[*corev1.NodeList]
	Pods(namespace string) Lister[*corev1.PodList]
	Secrets(namespace string) Lister[*corev1.SecretList]
	Services(namespace string) Lister[*corev1.ServiceList]
	EndpointSlices(namespace string) Lister[*discoveryv1.EndpointSliceList]
}

// TypedClient is the Client of a cluster, and the sink of the status
// reporter's Events: the requests client-go's generated typed clients make
// (their List and Watch, protobuf preferred as they do), over a scheme of
// core/v1 and discovery/v1 only. The full clientset
// (k8s.io/client-go/kubernetes) would link every typed client of every
// API group and register all of them at start, for two groups used; and
// client-go's generic typed client (k8s.io/client-go/gentype) links its
// fakes' tracker (k8s.io/client-go/testing), with server-side apply's
// managed fields, kube-openapi and the OpenAPI models behind it
// (docs/performance.md "What the binary maps").
type TypedClient struct {
	core, discovery rest.Interface
}

// clientSchemes are the scheme of the only groups the agent decodes
// typed (core/v1, discovery/v1, and meta/v1's options and watch events),
// its codecs and parameter codec; made on first use, so that a
// manifest-directory run never builds them.
var clientSchemes = sync.OnceValue(func() schemeCodecs {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, discoveryv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return schemeCodecs{scheme: s, codecs: serializer.NewCodecFactory(s), params: runtime.NewParameterCodec(s)}
})

type schemeCodecs struct {
	scheme *runtime.Scheme
	codecs serializer.CodecFactory
	params runtime.ParameterCodec
}

// NewTypedClient makes the client over cfg, one HTTP client shared by both
// groups and, when cfg sets QPS and no rate limiter, one rate limiter, as
// kubernetes.NewForConfig does.
func NewTypedClient(cfg *rest.Config) (*TypedClient, error) {
	c := *cfg
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(&c)
	if err != nil {
		return nil, err
	}
	if c.RateLimiter == nil && c.QPS > 0 {
		if c.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	core, err := groupClient(c, httpClient, "/api", corev1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	disc, err := groupClient(c, httpClient, "/apis", discoveryv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return &TypedClient{core: core, discovery: disc}, nil
}

// groupClient is a generated typed client's setConfigDefaults and REST client.
func groupClient(c rest.Config, h *http.Client, path string, gv schema.GroupVersion) (rest.Interface, error) {
	c.GroupVersion = &gv
	c.APIPath = path
	sc := clientSchemes()
	c.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(sc.scheme, sc.codecs).WithoutConversion()
	return rest.RESTClientForConfigAndClient(&c, h)
}

// Nodes implements Client.
func (c *TypedClient) Nodes() Lister[*corev1.NodeList] {
	return lister[*corev1.NodeList]{c.core, "nodes", "", func() *corev1.NodeList { return &corev1.NodeList{} }}
}

// Pods implements Client.
func (c *TypedClient) Pods(namespace string) Lister[*corev1.PodList] {
	return lister[*corev1.PodList]{c.core, "pods", namespace, func() *corev1.PodList { return &corev1.PodList{} }}
}

// Secrets implements Client.
func (c *TypedClient) Secrets(namespace string) Lister[*corev1.SecretList] {
	return lister[*corev1.SecretList]{c.core, "secrets", namespace, func() *corev1.SecretList { return &corev1.SecretList{} }}
}

// Services implements Client.
func (c *TypedClient) Services(namespace string) Lister[*corev1.ServiceList] {
	return lister[*corev1.ServiceList]{c.core, "services", namespace, func() *corev1.ServiceList { return &corev1.ServiceList{} }}
}

// EndpointSlices implements Client.
func (c *TypedClient) EndpointSlices(namespace string) Lister[*discoveryv1.EndpointSliceList] {
	return lister[*discoveryv1.EndpointSliceList]{c.discovery, "endpointslices", namespace,
		func() *discoveryv1.EndpointSliceList { return &discoveryv1.EndpointSliceList{} }}
}

// lister is a generated typed client's List and Watch of one resource
// (client-go's gentype.Client, protobuf preferred): the same requests.
type lister[L runtime.Object] struct {
	c         rest.Interface
	resource  string
	namespace string // "": every namespace, or a cluster-scoped resource
	newList   func() L
}

func (l lister[L]) request(opts *metav1.ListOptions) *rest.Request {
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return l.c.Get().UseProtobufAsDefaultIfPreferred(true).
		NamespaceIfScoped(l.namespace, l.namespace != "").Resource(l.resource).
		VersionedParams(opts, clientSchemes().params).Timeout(timeout)
}

// List implements Lister.
func (l lister[L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	list := l.newList()
	err := l.request(&opts).Do(ctx).Into(list)
	return list, err
}

// Watch implements Lister.
func (l lister[L]) Watch(ctx context.Context, opts metav1.ListOptions) (kwatch.Interface, error) {
	opts.Watch = true
	return l.request(&opts).Watch(ctx)
}

// ServerGroups is the server's API groups (GET /apis), for ResolveGroup.
func (c *TypedClient) ServerGroups() (*metav1.APIGroupList, error) {
	raw, err := c.core.Get().AbsPath("/apis").SetHeader("Accept", "application/json").Do(context.TODO()).Raw()
	if err != nil {
		return nil, err
	}
	var l metav1.APIGroupList
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("decode /apis: %w", err)
	}
	return &l, nil
}

// Events is where the status reporter's recorder writes core/v1 Events,
// in the event's own namespace (what client-go's EventSinkImpl over
// Events("") creates).
func (c *TypedClient) Events() EventSink { return eventSink{c.core} }

// EventSink creates Events (watch/status's EventSink).
type EventSink interface {
	Create(ev *corev1.Event) (*corev1.Event, error)
}

type eventSink struct{ c rest.Interface }

func (e eventSink) Create(ev *corev1.Event) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := e.c.Post().NamespaceIfScoped(ev.Namespace, ev.Namespace != "").Resource("events").
		Body(ev).Do(context.Background()).Into(out)
	return out, err
}
