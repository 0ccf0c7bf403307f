package state

import "net/netip"

// The Kubernetes kinds behind service advertisement (docs/routes.md §8.4),
// watched only while some service range is configured: only the fields
// §8.4 reads.
const (
	KindService       Kind = "service"
	KindEndpointSlice Kind = "endpointslice"
)

// ServiceCIDR is one entry of a BGPConfiguration's serviceClusterIPs,
// serviceExternalIPs or serviceLoadBalancerIPs.
type ServiceCIDR struct {
	CIDR string `json:"cidr"`
}

// Service is a Kubernetes v1 Service. Its key is "NAMESPACE/NAME".
type Service struct {
	Namespace             string   `json:"namespace"`
	Name                  string   `json:"name"`
	Type                  string   `json:"type,omitempty"`
	ClusterIPs            []string `json:"clusterIPs,omitempty"`
	ExternalIPs           []string `json:"externalIPs,omitempty"`
	LoadBalancerIP        string   `json:"loadBalancerIP,omitempty"`
	IngressIPs            []string `json:"ingressIPs,omitempty"` // status.loadBalancer.ingress[].ip
	ExternalTrafficPolicy string   `json:"externalTrafficPolicy,omitempty"`
	IPFamilies            []string `json:"ipFamilies,omitempty"`
}

// Key is the service's key in State: "NAMESPACE/NAME".
func (s *Service) Key() string { return s.Namespace + "/" + s.Name }

// EndpointSlice is a discovery.k8s.io/v1 EndpointSlice. ServiceName is its
// kubernetes.io/service-name label ("" when absent: ignored, docs/routes.md
// §11.4). Its key is "NAMESPACE/NAME".
type EndpointSlice struct {
	Namespace   string     `json:"namespace"`
	Name        string     `json:"name"`
	ServiceName string     `json:"serviceName,omitempty"`
	AddressType string     `json:"addressType,omitempty"`
	Endpoints   []Endpoint `json:"endpoints,omitempty"`
}

// Key is the slice's key in State: "NAMESPACE/NAME".
func (e *EndpointSlice) Key() string { return e.Namespace + "/" + e.Name }

// Endpoint is one endpoint of a slice: Ready nil counts as ready.
type Endpoint struct {
	NodeName string `json:"nodeName,omitempty"`
	Ready    *bool  `json:"ready,omitempty"`
}

// ServiceEntry is a Service with its parsed addresses (unparsable ones
// skipped, docs/routes.md §11.4) and the host paths it gives now
// (docs/routes.md §8.4 rule 2), sorted by PrefixKey.
type ServiceEntry struct {
	Spec        *Service
	ClusterIPs  []netip.Addr
	ExternalIPs []netip.Addr
	LBIPs       []netip.Addr // loadBalancerIP and the ingress IPs
	IngressIPs  []netip.Addr
	Gives       []netip.Prefix
}

// ServiceRanges are the service ranges of the default BGPConfiguration in
// force, parsed (docs/routes.md §8.4 rule 1).
type ServiceRanges struct {
	ClusterIPs, ExternalIPs, LoadBalancerIPs []netip.Prefix
	// Aggregate: serviceLoadBalancerAggregation is not Disabled; Excluded:
	// this node carries the exclusion label.
	Aggregate, Excluded bool
}

// Any reports whether some range is configured: the Service and
// EndpointSlice watches run only then.
func (r ServiceRanges) Any() bool {
	return len(r.ClusterIPs)+len(r.ExternalIPs)+len(r.LoadBalancerIPs) > 0
}

// ServiceUpserted: the Service watch saw a Service created or changed.
type ServiceUpserted struct {
	Service Service `json:"service"`
}

// ServiceDeleted: the Service watch saw a Service go.
type ServiceDeleted struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// EndpointSliceUpserted: the EndpointSlice watch saw a slice created or changed.
type EndpointSliceUpserted struct {
	Slice EndpointSlice `json:"slice"`
}

// EndpointSliceDeleted: the EndpointSlice watch saw a slice go.
type EndpointSliceDeleted struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (ServiceUpserted) ActionName() string       { return "serviceUpserted" }
func (ServiceDeleted) ActionName() string        { return "serviceDeleted" }
func (EndpointSliceUpserted) ActionName() string { return "endpointSliceUpserted" }
func (EndpointSliceDeleted) ActionName() string  { return "endpointSliceDeleted" }
