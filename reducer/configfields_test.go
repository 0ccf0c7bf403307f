package reducer

import (
	"reflect"
	"testing"
	"time"

	"github.com/peeragent/peeragent/internal/testrig/fieldcov"
	"github.com/peeragent/peeragent/state"
)

// shapesNoNeighbor are the fields of state.BGPConfiguration that
// neighborShape clears, so that configChanged re-derives no neighbor when
// only they change, with why. The guard below is configChanged's as
// TestSameConfigIgnoresOnlyBookkeeping is Neighbor.SameConfig's: a new
// field shapes neighbors (a full re-derive) unless it is listed here, and a
// listed field must really shape none.
var shapesNoNeighbor = map[string]string{
	"LogSeverityScreen":              "the log level is applied by the runner (docs/semantics.md §1)",
	"Communities":                    "path attributes, refreshed by refreshCommunities (docs/routes.md §8.5)",
	"PrefixAdvertisements":           "path attributes, refreshed by refreshCommunities (docs/routes.md §8.5)",
	"ServiceClusterIPs":              "service paths (docs/routes.md §8.4)",
	"ServiceExternalIPs":             "service paths (docs/routes.md §8.4)",
	"ServiceLoadBalancerIPs":         "service paths (docs/routes.md §8.4)",
	"ServiceLoadBalancerAggregation": "service paths (docs/routes.md §8.4)",
	"IgnoredInterfaces":              "not applied, a problem only (docs/routes.md appendix C)",
	"LocalWorkloadPeeringIPV4":       "not applied, a problem only (docs/routes.md appendix C)",
	"LocalWorkloadPeeringIPV6":       "not applied, a problem only (docs/routes.md appendix C)",
}

// fullConfig has a valid, non-zero value in every field.
func fullConfig() state.BGPConfiguration {
	mesh := true
	return state.BGPConfiguration{Name: "default", ASNumber: 64512, NodeToNodeMeshEnabled: &mesh, ListenPort: 179,
		NodeMeshPassword:       &state.SecretKeyRef{Name: "mesh", Key: "pw", Optional: true},
		NodeMeshMaxRestartTime: &state.Duration{Duration: 90 * time.Second}, LogSeverityScreen: "Info",
		Communities:                    []state.Community{{Name: "a", Value: "65000:1"}, {Name: "b", Value: "65000:0:2"}},
		PrefixAdvertisements:           &[]state.PrefixAdvertisement{{CIDR: "10.244.0.0/16", Communities: []string{"a", "b"}}},
		ServiceClusterIPs:              []state.ServiceCIDR{{CIDR: "10.96.0.0/12"}, {CIDR: "fd00:96::/108"}},
		ServiceExternalIPs:             []state.ServiceCIDR{{CIDR: "192.0.2.0/24"}, {CIDR: "198.51.100.0/24"}},
		ServiceLoadBalancerIPs:         []state.ServiceCIDR{{CIDR: "203.0.113.0/24"}, {CIDR: "203.0.114.0/24"}},
		ServiceLoadBalancerAggregation: "Enabled", BindMode: "None", IgnoredInterfaces: []string{"eth9", "eth8"},
		LocalWorkloadPeeringIPV4: "169.254.0.179", LocalWorkloadPeeringIPV6: "fe80::179",
		Unsupported: []string{"spec.a", "spec.b"}}
}

func TestNeighborShapeClearsOnlyFieldsThatShapeNoNeighbor(t *testing.T) {
	base := fullConfig()
	fieldcov.Ignores(t, base, shapesNoNeighbor, "neighborShape",
		"clear it in neighborShape only if it shapes no neighbor (shapesNoNeighbor)",
		func(changed state.BGPConfiguration) bool {
			return !reflect.DeepEqual(neighborShape(base), neighborShape(changed))
		})
}

// TestFieldsThatShapeNoNeighborShapeNone: each listed field changed alone
// in the default configuration of a node with a mesh neighbor and a
// BGPPeer leaves the neighbors and the server as they were.
func TestFieldsThatShapeNoNeighborShapeNone(t *testing.T) {
	start := func(c state.BGPConfiguration) state.State {
		s := state.New("node-a", state.Options{})
		for _, a := range []state.Action{
			state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{{Name: "node-a", IPv4Address: "10.0.0.1/24"},
				{Name: "node-b", IPv4Address: "10.0.0.2/24"}}},
			state.SourceSynced{Kind: state.KindBGPConfiguration, Configs: []state.BGPConfiguration{c}},
			state.SourceSynced{Kind: state.KindBGPFilter}, state.SourceSynced{Kind: state.KindSecret,
				Secrets: []state.Secret{{Name: "mesh", Data: map[string]state.Password{"pw": state.NewPassword("k")}}}},
			state.SourceSynced{Kind: state.KindBGPPeer, Peers: []state.BGPPeer{{Name: "tor", PeerIP: "192.0.2.1", ASNumber: 65001}}},
		} {
			s = Reduce(s, a)
		}
		return s
	}
	base := fullConfig()
	base.Unsupported = nil
	s0 := start(base)
	if s0.Out.Neighbors.Len() != 2 {
		t.Fatalf("%d neighbors, want the mesh one and the BGPPeer", s0.Out.Neighbors.Len())
	}
	for name := range shapesNoNeighbor {
		changed := fieldcov.Changed(base, name)
		s1 := Reduce(s0, state.ConfigUpserted{Config: changed})
		if s1.Server != s0.Server {
			t.Errorf("%s changed alone changes the server: %+v -> %+v", name, s0.Server, s1.Server)
		}
		if d0, d1 := s0.Dump().Neighbors, s1.Dump().Neighbors; !reflect.DeepEqual(d0, d1) {
			t.Errorf("%s changed alone changes the neighbors", name)
		}
	}
}
