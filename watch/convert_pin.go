package watch

import (
	v3 "github.com/projectcalico/api/pkg/apis/projectcalico/v3"
	"github.com/projectcalico/api/pkg/lib/numorstring"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The pinned API, field by field (docs/design.md, "Adding a setting"). Each conversion below builds
// only while the upstream type has exactly these fields (names and types;
// tags are ignored), so that a bump of github.com/projectcalico/api that
// adds, removes or retypes a field stops the build here. Then: read the
// new field in convert.go (or make it a problem there), list it in
// convert_fields_test.go's notRead with why if it has no meaning here, and
// update the copy below.

type pinBGPPeerSpec struct {
	Node                     string
	NodeSelector             string
	PeerIP                   string
	ASNumber                 numorstring.ASNumber
	LocalASNumber            *numorstring.ASNumber
	PeerSelector             string
	KeepOriginalNextHop      bool
	NextHopMode              *v3.NextHopMode
	Password                 *v3.BGPPassword
	SourceAddress            v3.SourceAddress
	MaxRestartTime           *metav1.Duration
	NumAllowedLocalASNumbers *int32
	TTLSecurity              *uint8
	ReachableBy              string
	Filters                  []string
	LocalWorkloadSelector    string
	ReversePeering           *v3.ReversePeering
}

type pinBGPPassword struct{ SecretKeyRef *corev1.SecretKeySelector }

type pinBGPConfigurationSpec struct {
	LogSeverityScreen              string
	NodeToNodeMeshEnabled          *bool
	ASNumber                       *numorstring.ASNumber
	ServiceLoadBalancerIPs         []v3.ServiceLoadBalancerIPBlock
	ServiceExternalIPs             []v3.ServiceExternalIPBlock
	ServiceClusterIPs              []v3.ServiceClusterIPBlock
	ServiceLoadBalancerAggregation *v3.ServiceLoadBalancerAggregation
	Communities                    []v3.Community
	PrefixAdvertisements           []v3.PrefixAdvertisement
	ListenPort                     uint16
	NodeMeshPassword               *v3.BGPPassword
	NodeMeshMaxRestartTime         *metav1.Duration
	BindMode                       *v3.BindMode
	IgnoredInterfaces              []string
	LocalWorkloadPeeringIPV4       string
	LocalWorkloadPeeringIPV6       string
}

type pinCIDRBlock struct{ CIDR string }

type pinCommunity struct{ Name, Value string }

type pinPrefixAdvertisement struct {
	CIDR        string
	Communities []string
}

type pinBGPFilterSpec struct {
	ExportV4 []v3.BGPFilterRuleV4
	ImportV4 []v3.BGPFilterRuleV4
	ExportV6 []v3.BGPFilterRuleV6
	ImportV6 []v3.BGPFilterRuleV6
}

type pinBGPFilterRuleV4 struct {
	CIDR          string
	PrefixLength  *v3.BGPFilterPrefixLengthV4
	Source        v3.BGPFilterMatchSource
	Interface     string
	MatchOperator v3.BGPFilterMatchOperator
	Action        v3.BGPFilterAction
}

type pinBGPFilterRuleV6 struct {
	CIDR          string
	PrefixLength  *v3.BGPFilterPrefixLengthV6
	Source        v3.BGPFilterMatchSource
	Interface     string
	MatchOperator v3.BGPFilterMatchOperator
	Action        v3.BGPFilterAction
}

type pinPrefixLength struct{ Min, Max *int32 }

type pinIPPoolSpec struct {
	CIDR              string
	VXLANMode         v3.VXLANMode
	IPIPMode          v3.IPIPMode
	NATOutgoing       bool
	Disabled          bool
	DisableBGPExport  bool
	BlockSize         int
	NodeSelector      string
	NamespaceSelector string
	IPIP              *v3.IPIPConfiguration
	NATOutgoingV1     bool
	AllowedUses       []v3.IPPoolAllowedUse
	AssignmentMode    *v3.AssignmentMode
}

// BlockAffinity is decoded into BlockAffinityObject (convert.go), whose
// spec is a superset; the pin still says when upstream's changes.
type pinBlockAffinitySpec struct {
	State   v3.BlockAffinityState
	Node    string
	CIDR    string
	Deleted bool
}

var (
	_ = pinBGPPeerSpec(v3.BGPPeerSpec{})
	_ = pinBGPPassword(v3.BGPPassword{})
	_ = pinBGPConfigurationSpec(v3.BGPConfigurationSpec{})
	_ = pinCIDRBlock(v3.ServiceClusterIPBlock{})
	_ = pinCIDRBlock(v3.ServiceExternalIPBlock{})
	_ = pinCIDRBlock(v3.ServiceLoadBalancerIPBlock{})
	_ = pinCommunity(v3.Community{})
	_ = pinPrefixAdvertisement(v3.PrefixAdvertisement{})
	_ = pinBGPFilterSpec(v3.BGPFilterSpec{})
	_ = pinBGPFilterRuleV4(v3.BGPFilterRuleV4{})
	_ = pinBGPFilterRuleV6(v3.BGPFilterRuleV6{})
	_ = pinPrefixLength(v3.BGPFilterPrefixLengthV4{})
	_ = pinPrefixLength(v3.BGPFilterPrefixLengthV6{})
	_ = pinIPPoolSpec(v3.IPPoolSpec{})
	_ = pinBlockAffinitySpec(v3.BlockAffinitySpec{})
)
