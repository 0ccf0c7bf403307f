package watch

import (
	"encoding/json"
	"maps"
	"slices"

	v3 "github.com/projectcalico/api/pkg/apis/projectcalico/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/peeragent/peeragent/state"
)

// Calico node annotations the agent reads.
const (
	AnnotationIPv4      = "projectcalico.org/IPv4Address"
	AnnotationIPv6      = "projectcalico.org/IPv6Address"
	AnnotationASN       = "projectcalico.org/ASNumber"
	AnnotationClusterID = "projectcalico.org/RouteReflectorClusterID"
)

// Peer converts a Calico BGPPeer (either API group decodes to this type).
func Peer(p *v3.BGPPeer) state.BGPPeer {
	s := p.Spec
	out := state.BGPPeer{
		Name: p.Name, Node: s.Node, NodeSelector: s.NodeSelector, PeerIP: s.PeerIP,
		PeerSelector: s.PeerSelector, ASNumber: int64(s.ASNumber),
		SourceAddress: string(s.SourceAddress), KeepOriginalNextHop: s.KeepOriginalNextHop,
		Filters: append([]string(nil), s.Filters...), ReachableBy: s.ReachableBy,
	}
	if s.LocalASNumber != nil {
		out.LocalASNumber = int64(*s.LocalASNumber)
	}
	if s.Password != nil && s.Password.SecretKeyRef != nil {
		out.Password = secretRef(s.Password.SecretKeyRef)
	}
	if s.MaxRestartTime != nil {
		out.MaxRestartTime = &state.Duration{Duration: s.MaxRestartTime.Duration}
	}
	if s.NumAllowedLocalASNumbers != nil {
		out.NumAllowedLocalASNumbers = *s.NumAllowedLocalASNumbers
	}
	if s.TTLSecurity != nil {
		out.TTLSecurity = int32(*s.TTLSecurity)
	}
	if s.NextHopMode != nil {
		out.NextHopMode = string(*s.NextHopMode)
	}
	if s.ReversePeering != nil {
		out.ReversePeering = string(*s.ReversePeering)
	}
	if s.LocalWorkloadSelector != "" { // known to the v3 type, not done by this agent
		out.Unsupported = []string{"spec.localWorkloadSelector"}
	}
	out.Annotations = peerAnnotations(p.Annotations)
	return out
}

// peerAnnotations keeps the annotations of the agent's own a BGPPeer may
// carry (state.AnnotationMaxPrefixes, docs/routes.md §9.9), as written, for
// the reducer to judge; nil when it has none. Every other annotation
// (kubectl's last-applied configuration...) is left behind, so that its
// changes cost no step.
func peerAnnotations(a map[string]string) map[string]string {
	v, ok := a[state.AnnotationMaxPrefixes]
	if !ok {
		return nil
	}
	return map[string]string{state.AnnotationMaxPrefixes: v}
}

func secretRef(r *corev1.SecretKeySelector) *state.SecretKeyRef {
	out := &state.SecretKeyRef{Name: r.Name, Key: r.Key}
	if r.Optional != nil {
		out.Optional = *r.Optional
	}
	return out
}

// Config converts a Calico BGPConfiguration.
func Config(c *v3.BGPConfiguration) state.BGPConfiguration {
	s := c.Spec
	out := state.BGPConfiguration{Name: c.Name, LogSeverityScreen: s.LogSeverityScreen}
	if s.ASNumber != nil {
		out.ASNumber = int64(*s.ASNumber)
	}
	if s.NodeToNodeMeshEnabled != nil {
		v := *s.NodeToNodeMeshEnabled
		out.NodeToNodeMeshEnabled = &v
	}
	out.ListenPort = int32(s.ListenPort)
	if s.NodeMeshPassword != nil && s.NodeMeshPassword.SecretKeyRef != nil {
		out.NodeMeshPassword = secretRef(s.NodeMeshPassword.SecretKeyRef)
	}
	if s.NodeMeshMaxRestartTime != nil {
		out.NodeMeshMaxRestartTime = &state.Duration{Duration: s.NodeMeshMaxRestartTime.Duration}
	}
	// docs/routes.md §8.4
	for _, b := range s.ServiceClusterIPs {
		out.ServiceClusterIPs = append(out.ServiceClusterIPs, state.ServiceCIDR{CIDR: b.CIDR})
	}
	for _, b := range s.ServiceExternalIPs {
		out.ServiceExternalIPs = append(out.ServiceExternalIPs, state.ServiceCIDR{CIDR: b.CIDR})
	}
	for _, b := range s.ServiceLoadBalancerIPs {
		out.ServiceLoadBalancerIPs = append(out.ServiceLoadBalancerIPs, state.ServiceCIDR{CIDR: b.CIDR})
	}
	if s.ServiceLoadBalancerAggregation != nil {
		out.ServiceLoadBalancerAggregation = string(*s.ServiceLoadBalancerAggregation)
	}
	configCommunities(&out, s)
	if s.BindMode != nil {
		out.BindMode = string(*s.BindMode)
	}
	out.IgnoredInterfaces = slices.Clone(s.IgnoredInterfaces)
	out.LocalWorkloadPeeringIPV4, out.LocalWorkloadPeeringIPV6 = s.LocalWorkloadPeeringIPV4, s.LocalWorkloadPeeringIPV6
	return out
}

// configCommunities copies communities and prefixAdvertisements
// (docs/routes.md §8.5): a prefixAdvertisements set to an empty list stays
// set (it overrides the default's, rule 1), an absent one stays nil.
func configCommunities(out *state.BGPConfiguration, s v3.BGPConfigurationSpec) {
	for _, c := range s.Communities {
		out.Communities = append(out.Communities, state.Community{Name: c.Name, Value: c.Value})
	}
	if s.PrefixAdvertisements == nil {
		return
	}
	pas := make([]state.PrefixAdvertisement, 0, len(s.PrefixAdvertisements))
	for _, pa := range s.PrefixAdvertisements {
		pas = append(pas, state.PrefixAdvertisement{CIDR: pa.CIDR, Communities: slices.Clone(pa.Communities)})
	}
	out.PrefixAdvertisements = &pas
}

// Filter converts a Calico BGPFilter.
func Filter(f *v3.BGPFilter) state.BGPFilter {
	out := state.BGPFilter{Name: f.Name}
	for _, r := range f.Spec.ExportV4 {
		out.ExportV4 = append(out.ExportV4, ruleV4(r))
	}
	for _, r := range f.Spec.ImportV4 {
		out.ImportV4 = append(out.ImportV4, ruleV4(r))
	}
	for _, r := range f.Spec.ExportV6 {
		out.ExportV6 = append(out.ExportV6, ruleV6(r))
	}
	for _, r := range f.Spec.ImportV6 {
		out.ImportV6 = append(out.ImportV6, ruleV6(r))
	}
	return out
}

func ruleV4(r v3.BGPFilterRuleV4) state.FilterRule {
	out := state.FilterRule{CIDR: r.CIDR, MatchOperator: string(r.MatchOperator), Source: string(r.Source),
		Interface: r.Interface, Action: string(r.Action)}
	if r.PrefixLength != nil {
		out.PrefixLength = prefixLength(r.PrefixLength.Min, r.PrefixLength.Max)
	}
	return out
}

func ruleV6(r v3.BGPFilterRuleV6) state.FilterRule {
	out := state.FilterRule{CIDR: r.CIDR, MatchOperator: string(r.MatchOperator), Source: string(r.Source),
		Interface: r.Interface, Action: string(r.Action)}
	if r.PrefixLength != nil {
		out.PrefixLength = prefixLength(r.PrefixLength.Min, r.PrefixLength.Max)
	}
	return out
}

func prefixLength(lo, hi *int32) *state.PrefixLength {
	out := &state.PrefixLength{}
	if lo != nil {
		out.Min = *lo
	}
	if hi != nil {
		out.Max = *hi
	}
	return out
}

// Node converts a Kubernetes Node: labels and the Calico annotations only,
// so a status-only update converts to an identical value.
func Node(n *corev1.Node) state.Node {
	a := n.Annotations
	return state.Node{Name: n.Name, Labels: maps.Clone(n.Labels),
		IPv4Address: a[AnnotationIPv4], IPv6Address: a[AnnotationIPv6],
		ASNumber: a[AnnotationASN], RRClusterID: a[AnnotationClusterID]}
}

// Secret converts a Secret's data; metadata is dropped, so a
// metadata-only change converts to an identical value.
func Secret(s *corev1.Secret) state.Secret {
	out := state.Secret{Name: s.Name, Data: map[string]state.Password{}}
	for k, v := range s.Data {
		out.Data[k] = state.NewPassword(string(v))
	}
	for k, v := range s.StringData {
		out.Data[k] = state.NewPassword(v)
	}
	return out
}

// BlockAffinityObject is a BlockAffinity of either API group as decoded
// here: crd.projectcalico.org/v1 writes spec.deleted as a string ("true"),
// projectcalico.org/v3 as a bool, so it is kept raw and passed on as text
// (docs/routes.md "Amendment to §1"); spec.type exists only in newer
// Calico.
type BlockAffinityObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		State   string          `json:"state"`
		Node    string          `json:"node"`
		CIDR    string          `json:"cidr"`
		Deleted json.RawMessage `json:"deleted,omitempty"`
		Type    string          `json:"type,omitempty"`
	} `json:"spec"`
}

// Affinity converts a BlockAffinity.
func Affinity(a *BlockAffinityObject) state.BlockAffinity {
	s := a.Spec
	out := state.BlockAffinity{Name: a.Name, Node: s.Node, CIDR: s.CIDR, State: s.State, Type: s.Type}
	if len(s.Deleted) > 0 && string(s.Deleted) != "null" {
		var text string
		if json.Unmarshal(s.Deleted, &text) != nil {
			text = string(s.Deleted) // a bool, or whatever it is: the reducer judges it
		}
		out.Deleted = text
	}
	return out
}

// Pool converts a Calico IPPool (only what docs/routes.md §8.6 reads).
func Pool(p *v3.IPPool) state.IPPool {
	s := p.Spec
	return state.IPPool{Name: p.Name, CIDR: s.CIDR, IPIPMode: string(s.IPIPMode), VXLANMode: string(s.VXLANMode),
		DisableBGPExport: s.DisableBGPExport, Disabled: s.Disabled}
}

// Pod converts a Pod of this node (docs/routes.md §8.1 rule 3): its
// addresses from status.podIPs, else status.podIP.
func Pod(p *corev1.Pod) state.Pod {
	out := state.Pod{Namespace: p.Namespace, Name: p.Name, HostNetwork: p.Spec.HostNetwork, Phase: string(p.Status.Phase)}
	for _, ip := range p.Status.PodIPs {
		out.PodIPs = append(out.PodIPs, ip.IP)
	}
	if len(out.PodIPs) == 0 && p.Status.PodIP != "" {
		out.PodIPs = []string{p.Status.PodIP}
	}
	return out
}
