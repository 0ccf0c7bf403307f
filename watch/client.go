package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	kwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
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
// (its generic gentype clients, protobuf preferred as they do), over a
// scheme of core/v1 and discovery/v1 only. The full clientset
// (k8s.io/client-go/kubernetes) would link every typed client of every
// API group and register all of them at start, for two groups used
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
	return gentype.NewClientWithList("nodes", c.core, clientSchemes().params, "",
		func() *corev1.Node { return &corev1.Node{} }, func() *corev1.NodeList { return &corev1.NodeList{} },
		gentype.PrefersProtobuf[*corev1.Node]())
}

// Pods implements Client.
func (c *TypedClient) Pods(namespace string) Lister[*corev1.PodList] {
	return gentype.NewClientWithList("pods", c.core, clientSchemes().params, namespace,
		func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} },
		gentype.PrefersProtobuf[*corev1.Pod]())
}

// Secrets implements Client.
func (c *TypedClient) Secrets(namespace string) Lister[*corev1.SecretList] {
	return gentype.NewClientWithList("secrets", c.core, clientSchemes().params, namespace,
		func() *corev1.Secret { return &corev1.Secret{} }, func() *corev1.SecretList { return &corev1.SecretList{} },
		gentype.PrefersProtobuf[*corev1.Secret]())
}

// Services implements Client.
func (c *TypedClient) Services(namespace string) Lister[*corev1.ServiceList] {
	return gentype.NewClientWithList("services", c.core, clientSchemes().params, namespace,
		func() *corev1.Service { return &corev1.Service{} }, func() *corev1.ServiceList { return &corev1.ServiceList{} },
		gentype.PrefersProtobuf[*corev1.Service]())
}

// EndpointSlices implements Client.
func (c *TypedClient) EndpointSlices(namespace string) Lister[*discoveryv1.EndpointSliceList] {
	return gentype.NewClientWithList("endpointslices", c.discovery, clientSchemes().params, namespace,
		func() *discoveryv1.EndpointSlice { return &discoveryv1.EndpointSlice{} },
		func() *discoveryv1.EndpointSliceList { return &discoveryv1.EndpointSliceList{} },
		gentype.PrefersProtobuf[*discoveryv1.EndpointSlice]())
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

// Events is the sink of an EventRecorder writing core/v1 Events, in the
// event's own namespace (client-go's EventSinkImpl over Events("")).
func (c *TypedClient) Events() record.EventSink { return eventSink{c.core} }

type eventSink struct{ c rest.Interface }

func (e eventSink) Create(ev *corev1.Event) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := e.c.Post().NamespaceIfScoped(ev.Namespace, ev.Namespace != "").Resource("events").
		Body(ev).Do(context.Background()).Into(out)
	return out, err
}

func (e eventSink) Update(ev *corev1.Event) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := e.c.Put().NamespaceIfScoped(ev.Namespace, ev.Namespace != "").Resource("events").
		Name(ev.Name).Body(ev).Do(context.Background()).Into(out)
	return out, err
}

func (e eventSink) Patch(ev *corev1.Event, data []byte) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := e.c.Patch(types.StrategicMergePatchType).NamespaceIfScoped(ev.Namespace, ev.Namespace != "").
		Resource("events").Name(ev.Name).Body(data).Do(context.Background()).Into(out)
	return out, err
}
