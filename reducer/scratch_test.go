package reducer

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/peeragent/peeragent/state"
)

func TestFromScratch(t *testing.T) {
	nodes := []state.Node{
		{Name: "node-a", IPv4Address: "10.0.0.1/24", IPv6Address: "fd00::1/64"},
		{Name: "node-b", IPv4Address: "10.0.0.2/24", IPv6Address: "fd00::2/64"},
		{Name: "node-c", IPv4Address: "10.0.0.10/24"},
	}
	off := false
	cases := []struct {
		name    string
		objects Objects
		want    []string // neighbor addresses
		watches []string
	}{
		{name: "empty", want: []string{}, watches: []string{}},
		{name: "mesh-three-nodes", objects: Objects{Nodes: nodes},
			want: []string{"10.0.0.2", "10.0.0.10", "fd00::2"}, watches: []string{}},
		{name: "mesh-off-global-peer-with-password", objects: Objects{
			Nodes:   nodes,
			Configs: []state.BGPConfiguration{{Name: "default", NodeToNodeMeshEnabled: &off}},
			Peers: []state.BGPPeer{{Name: "tor", PeerIP: "192.0.2.1", ASNumber: 65000,
				Password: &state.SecretKeyRef{Name: "bgp", Key: "tor"}}},
		}, want: []string{"192.0.2.1"}, watches: []string{"bgp"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := FromScratch("node-a", state.Options{}, tc.objects)
			if !s.AllSynced() {
				t.Errorf("not every source synced: %v", s.Synced)
			}
			got := []string{}
			s.Out.Neighbors.Range(func(_ string, n *state.Neighbor) bool {
				got = append(got, n.Address.String())
				return true
			})
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("neighbors (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.watches, s.Out.Watches.Keys()); d != "" {
				t.Errorf("watches (-want +got):\n%s", d)
			}
		})
	}
}

func TestObjectsOfRoundTrip(t *testing.T) {
	objs := Objects{
		Nodes:   []state.Node{{Name: "node-b", IPv4Address: "10.0.0.2/24"}, {Name: "node-a", IPv4Address: "10.0.0.1/24"}},
		Peers:   []state.BGPPeer{{Name: "p2", PeerSelector: "all()"}, {Name: "p1", PeerIP: "192.0.2.1", ASNumber: 65000}},
		Configs: []state.BGPConfiguration{{Name: "node.node-a", ListenPort: 1790}, {Name: "default", ASNumber: 64513}},
		Filters: []state.BGPFilter{{Name: "f1", ImportV4: []state.FilterRule{{Action: "Accept"}}}},
		Secrets: []state.Secret{{Name: "s1", Data: map[string]state.Password{"k": state.NewPassword("x")}}},
	}
	want := Objects{
		Nodes:   []state.Node{objs.Nodes[1], objs.Nodes[0]},
		Peers:   []state.BGPPeer{objs.Peers[1], objs.Peers[0]},
		Configs: []state.BGPConfiguration{objs.Configs[1], objs.Configs[0]},
		Filters: objs.Filters,
		Secrets: objs.Secrets,
	}
	got := ObjectsOf(FromScratch("node-a", state.Options{}, objs))
	pw := cmp.Comparer(func(a, b state.Password) bool { return a == b })
	if d := cmp.Diff(want, got, pw); d != "" {
		t.Errorf("ObjectsOf (-want +got):\n%s", d)
	}
}
