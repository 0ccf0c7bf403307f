package main

import (
	"os"
	"path/filepath"
	"testing"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"google.golang.org/protobuf/proto"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/effects/gobgp"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/tools/meshsim/floor"
	"github.com/peeragent/peeragent/watch"
)

// TestFloorConfiguredAsTheAgent: for the manifests meshsim writes, the
// GoBGP floor makes the calls the agent makes (docs/performance.md "The
// GoBGP floor of the mesh"): the agent's effects for a fresh start, from
// its reducer with run's default options, as its executor maps them
// (gobgp.CallsFor, gobgp.SharedRequests), against floor.Config's
// requests for the command line meshsim gives the floor. 12 nodes, so
// that Calico's passivity by address text (10.200.0.10 < 10.200.0.9) is
// covered.
func TestFloorConfiguredAsTheAgent(t *testing.T) {
	topo := newTopology(12, "test")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(manifests(topo)), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := state.Options{Namespace: state.DefaultNamespace, MaxPaths: state.DefaultMaxPaths, MaxPrefixes: state.DefaultMaxPrefixes}
	for _, nd := range topo.nodes {
		objs, probs := watch.LoadDirOn(dir, state.DefaultNamespace, nd.name)
		if len(probs) > 0 {
			t.Fatalf("%s: %v", nd.name, probs)
		}
		s := state.New(nd.name, opts)
		for _, a := range objs.Actions() {
			s = reducer.Reduce(s, a)
		}
		cfg := floorConfig(t, topo, nd)
		reqs, err := cfg.Requests()
		if err != nil {
			t.Fatal(err)
		}
		var peers, sets int
		for _, e := range effects.Diff(state.New(nd.name, opts), s) {
			switch x := e.(type) {
			case effects.StartServer:
				g := reqs.Start.Global
				if x.Server.ASN != g.Asn || x.Server.RouterID.String() != g.RouterId || int32(x.Server.ListenPort) != g.ListenPort {
					t.Errorf("%s: agent's server %+v, floor's %v", nd.name, x.Server, g)
				}
				if x.Server.Listen() != nil {
					t.Errorf("%s: the agent's server listens on %v (meshsim gives --bgp-listen-address)", nd.name, x.Server.Listen())
				}
			case effects.SetAdd:
				m := x.Member
				want := &api.AddDefinedSetRequest{DefinedSet: &api.DefinedSet{DefinedType: api.DefinedType_DEFINED_TYPE_PREFIX, Name: m.Set,
					Prefixes: []*api.Prefix{{IpPrefix: m.Prefix.String(), MaskLengthMin: uint32(m.Min), MaskLengthMax: uint32(m.Max)}}}}
				if sets >= len(reqs.Sets) || !proto.Equal(want, reqs.Sets[sets]) {
					t.Errorf("%s: agent's set member %v is not the floor's %dth", nd.name, m, sets)
				}
				sets++
			case effects.AddPath:
				p := reqs.Path
				n, _ := p.Nlri.(*bgp.IPAddrPrefix)
				var nh string
				for _, a := range p.Attrs {
					if v, ok := a.(*bgp.PathAttributeNextHop); ok {
						nh = v.Value.String()
					}
				}
				if n == nil || n.Prefix != x.Path.Prefix || nh != x.Path.NextHop.String() || len(x.Path.Communities) != 0 || len(p.Attrs) != 2 {
					t.Errorf("%s: agent's path %+v, floor's %v via %s", nd.name, x.Path, p.Nlri, nh)
				}
			case effects.SetPolicy:
				if !x.Policy.Equal(state.Policy{CalicoExport: true}) {
					t.Errorf("%s: agent's policy for %s: %+v (the floor has the shared export policy only)", nd.name, x.Addr, x.Policy)
				}
			case effects.AddPeer:
				calls, err := gobgp.CallsFor(x.Neighbor)
				if err != nil {
					t.Fatal(err)
				}
				if len(calls.Sets)+len(calls.Policies) > 0 || calls.Member != nil {
					t.Errorf("%s: the agent makes policy calls for %s: %+v", nd.name, x.Neighbor.Address, calls)
				}
				if peers >= len(reqs.Peers) || !proto.Equal(calls.Peer, reqs.Peers[peers]) {
					t.Errorf("%s: agent's peer %v\nis not the floor's %dth", nd.name, calls.Peer, peers)
				}
				peers++
			}
		}
		if peers != len(reqs.Peers) || peers != len(topo.nodes)-1 || sets != len(reqs.Sets) {
			t.Errorf("%s: agent's %d peers and %d set members, floor's %d and %d", nd.name, peers, sets, len(reqs.Peers), len(reqs.Sets))
		}
		// The shared objects are the executor's own requests.
		shared := gobgp.SharedRequests()
		if len(shared.Sets) != len(reqs.Shared.Sets) || len(shared.Policies) != len(reqs.Shared.Policies) || len(shared.Assignments) != len(reqs.Shared.Assignments) {
			t.Errorf("%s: shared objects differ", nd.name)
		}
		// The prefix limit follows the flag, 0 none.
		cfg.MaxPrefixes = 0
		if r, err := cfg.Requests(); err != nil || r.Peers[0].Peer.AfiSafis[0].PrefixLimits != nil {
			t.Errorf("%s: -max-prefixes 0 still sets a limit: %v %v", nd.name, r.Peers[0].Peer.AfiSafis[0], err)
		}
	}
}

// floorConfig is the floor's config for nd as its command line from
// meshsim gives it, parsed as meshsim-floor parses it.
func floorConfig(t *testing.T, topo *topology, nd *node) floor.Config {
	t.Helper()
	dir := t.TempDir()
	sp := floorSpeaker{}
	if err := sp.prepare(topo, nd, dir); err != nil {
		t.Fatal(err)
	}
	c, err := floor.ParseFlags(sp.command(nd, dir).Args[5:])
	if err != nil {
		t.Fatal(err)
	}
	return c
}
