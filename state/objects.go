package state

// The input objects, as the watchers convert them from Kubernetes. They keep
// the user's raw text (selectors, addresses, annotations) so that bad input
// can be reported as a problem by the reducer rather than lost at the edge.
// Field names follow Calico's JSON so that manifests and goldens read alike.

// SecretKeyRef names one key of a Secret in the agent's namespace.
type SecretKeyRef struct {
	Name     string `json:"name"`
	Key      string `json:"key"`
	Optional bool   `json:"optional,omitempty"`
}

// AnnotationMaxPrefixes on a BGPPeer overrides --max-prefixes for its
// neighbors: a whole number of routes from 1 to 4294967295 (docs/routes.md
// §9.9). Calico's BGPPeer has no prefix limit field.
const AnnotationMaxPrefixes = "peeragent.io/max-prefixes"

// BGPPeer is a Calico BGPPeer spec (projectcalico.org/v3 BGPPeerSpec),
// with the annotations of the agent's own it carries.
type BGPPeer struct {
	Name                     string        `json:"name"`
	Node                     string        `json:"node,omitempty"`
	NodeSelector             string        `json:"nodeSelector,omitempty"`
	PeerIP                   string        `json:"peerIP,omitempty"`
	PeerSelector             string        `json:"peerSelector,omitempty"`
	ASNumber                 int64         `json:"asNumber,omitempty"`
	LocalASNumber            int64         `json:"localASNumber,omitempty"`
	Password                 *SecretKeyRef `json:"password,omitempty"`
	SourceAddress            string        `json:"sourceAddress,omitempty"`
	MaxRestartTime           *Duration     `json:"maxRestartTime,omitempty"`
	KeepaliveTime            *Duration     `json:"keepaliveTime,omitempty"` // Calico v3.32, newer than the pinned API
	NumAllowedLocalASNumbers int32         `json:"numAllowedLocalASNumbers,omitempty"`
	TTLSecurity              int32         `json:"ttlSecurity,omitempty"`
	KeepOriginalNextHop      bool          `json:"keepOriginalNextHop,omitempty"`
	NextHopMode              string        `json:"nextHopMode,omitempty"`
	ReversePeering           string        `json:"reversePeering,omitempty"`
	Filters                  []string      `json:"filters,omitempty"`
	ReachableBy              string        `json:"reachableBy,omitempty"`
	// Annotations are the BGPPeer's annotations this agent reads, as
	// written (AnnotationMaxPrefixes); the sources copy no other.
	Annotations map[string]string `json:"annotations,omitempty"`
	// Unsupported lists the fields the source found that this agent does
	// not support (newer Calico fields, typos), by their JSON path: the
	// object is invalid while any is set (docs/semantics.md §7).
	Unsupported []string `json:"unsupported,omitempty"`
}

// BGPConfiguration is a Calico BGPConfiguration: "default" or "node.<name>".
// Pointers distinguish "unset" from a zero value where Calico does.
type BGPConfiguration struct {
	Name                   string        `json:"name"`
	ASNumber               int64         `json:"asNumber,omitempty"`
	NodeToNodeMeshEnabled  *bool         `json:"nodeToNodeMeshEnabled,omitempty"`
	ListenPort             int32         `json:"listenPort,omitempty"`
	NodeMeshPassword       *SecretKeyRef `json:"nodeMeshPassword,omitempty"`
	NodeMeshMaxRestartTime *Duration     `json:"nodeMeshMaxRestartTime,omitempty"`
	LogSeverityScreen      string        `json:"logSeverityScreen,omitempty"`
	// Communities and PrefixAdvertisements (docs/routes.md §8.5). A nil
	// PrefixAdvertisements is unset; a set empty list in node.<N> still
	// overrides the default's.
	Communities          []Community            `json:"communities,omitempty"`
	PrefixAdvertisements *[]PrefixAdvertisement `json:"prefixAdvertisements,omitempty"`
	// Service ranges (docs/routes.md §8.4), read from "default" only.
	ServiceClusterIPs              []ServiceCIDR `json:"serviceClusterIPs,omitempty"`
	ServiceExternalIPs             []ServiceCIDR `json:"serviceExternalIPs,omitempty"`
	ServiceLoadBalancerIPs         []ServiceCIDR `json:"serviceLoadBalancerIPs,omitempty"`
	ServiceLoadBalancerAggregation string        `json:"serviceLoadBalancerAggregation,omitempty"`
	// Fields of the pinned API this agent does not apply, kept so that the
	// reducer names each in a problem (docs/semantics.md §7): bindMode
	// NodeIP, ignoredInterfaces, localWorkloadPeeringIPV4/IPV6.
	BindMode                 string   `json:"bindMode,omitempty"`
	IgnoredInterfaces        []string `json:"ignoredInterfaces,omitempty"`
	LocalWorkloadPeeringIPV4 string   `json:"localWorkloadPeeringIPV4,omitempty"`
	LocalWorkloadPeeringIPV6 string   `json:"localWorkloadPeeringIPV6,omitempty"`
	Unsupported              []string `json:"unsupported,omitempty"` // as BGPPeer's
}

// BGPFilter is a Calico BGPFilter: ordered rules per direction and family.
type BGPFilter struct {
	Name     string       `json:"name"`
	ExportV4 []FilterRule `json:"exportV4,omitempty"`
	ImportV4 []FilterRule `json:"importV4,omitempty"`
	ExportV6 []FilterRule `json:"exportV6,omitempty"`
	ImportV6 []FilterRule `json:"importV6,omitempty"`
	// Unsupported fields (e.g. a rule's peerType): as BGPPeer's. A filter
	// applied without them would accept or reject other routes.
	Unsupported []string `json:"unsupported,omitempty"`
}

// FilterRule is one rule of a BGPFilter, as the user wrote it.
type FilterRule struct {
	CIDR          string        `json:"cidr,omitempty"`
	PrefixLength  *PrefixLength `json:"prefixLength,omitempty"`
	MatchOperator string        `json:"matchOperator,omitempty"`
	Source        string        `json:"source,omitempty"`
	Interface     string        `json:"interface,omitempty"`
	Action        string        `json:"action"`
}

// PrefixLength bounds the length of matched prefixes (0 means unset).
type PrefixLength struct {
	Min int32 `json:"min,omitempty"`
	Max int32 `json:"max,omitempty"`
}

// Node is a Kubernetes Node: its labels and the Calico annotations.
type Node struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels,omitempty"`
	IPv4Address string            `json:"ipv4Address,omitempty"`
	IPv6Address string            `json:"ipv6Address,omitempty"`
	ASNumber    string            `json:"asNumber,omitempty"`
	RRClusterID string            `json:"routeReflectorClusterID,omitempty"`
}

// Secret is a Secret of the agent's namespace; only its data matters.
type Secret struct {
	Name string              `json:"name"`
	Data map[string]Password `json:"data,omitempty"`
}

// Community is one named community of a BGPConfiguration's `communities`
// (docs/routes.md §8.5): Value is "a:b" or "a:b:c" as the user wrote it.
type Community struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// PrefixAdvertisement is one entry of a BGPConfiguration's
// `prefixAdvertisements`: communities (values or names of `communities`)
// for the paths inside CIDR (docs/routes.md §8.5).
type PrefixAdvertisement struct {
	CIDR        string   `json:"cidr"`
	Communities []string `json:"communities,omitempty"`
}

// BlockAffinity is a Calico BlockAffinity (docs/routes.md "Amendment to
// §1"). Deleted is the text of `spec.deleted`: crd.projectcalico.org/v1
// holds a string there, projectcalico.org/v3 a bool (written "true" or
// "false" by the watcher), so that an unreadable value reaches the reducer
// as a problem (docs/routes.md §11.1).
type BlockAffinity struct {
	Name        string   `json:"name"`
	Node        string   `json:"node,omitempty"`
	CIDR        string   `json:"cidr,omitempty"`
	State       string   `json:"state,omitempty"`
	Deleted     string   `json:"deleted,omitempty"`
	Type        string   `json:"type,omitempty"`
	Unsupported []string `json:"unsupported,omitempty"` // as BGPPeer's
}

// IPPool is a Calico IPPool: only what docs/routes.md §8.6 reads.
type IPPool struct {
	Name             string   `json:"name"`
	CIDR             string   `json:"cidr,omitempty"`
	IPIPMode         string   `json:"ipipMode,omitempty"`
	VXLANMode        string   `json:"vxlanMode,omitempty"`
	DisableBGPExport bool     `json:"disableBGPExport,omitempty"`
	Disabled         bool     `json:"disabled,omitempty"` // read, no effect (docs/routes.md §8.6)
	Unsupported      []string `json:"unsupported,omitempty"`
}

// Pod is a Pod on this node: only what docs/routes.md §8.1 rule 3 reads.
// Its key is "NAMESPACE/NAME".
type Pod struct {
	Namespace   string   `json:"namespace"`
	Name        string   `json:"name"`
	HostNetwork bool     `json:"hostNetwork,omitempty"`
	Phase       string   `json:"phase,omitempty"`
	PodIPs      []string `json:"podIPs,omitempty"`
}

// Key is the pod's key in State: "NAMESPACE/NAME".
func (p *Pod) Key() string { return p.Namespace + "/" + p.Name }
