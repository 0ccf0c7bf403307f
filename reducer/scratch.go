package reducer

import (
	"slices"
	"strings"

	"github.com/peeragent/peeragent/state"
)

// Objects are complete lists of the input objects of every kind: what a
// full relist of every source would deliver.
type Objects struct {
	Peers   []state.BGPPeer
	Configs []state.BGPConfiguration
	Filters []state.BGPFilter
	Nodes   []state.Node
	Secrets []state.Secret
	// Affinities are this node's; Pods too.
	Affinities []state.BlockAffinity
	Pools      []state.IPPool
	Pods       []state.Pod
	// Services and EndpointSlices are listed only while some service range
	// is configured (docs/routes.md §8.4).
	Services       []state.Service
	EndpointSlices []state.EndpointSlice
	// Learned are the running speaker's best paths that count
	// (docs/routes.md §9.1), by prefix.
	Learned []state.BestPaths
}

// FromScratch derives the State of the agent on node from complete object
// lists alone, with no history: one SourceSynced per kind reduced into
// state.New. It is the reference the incremental reducer must agree with
// (the property test compares them) and "the old way" benchmarks measure
// against. Session history (applied configs, flaps, generations) is not
// derivable from objects, so the result has fresh sessions only.
//
// The State keeps pointers into objects' slices and maps: the caller must
// not modify them afterwards.
func FromScratch(node string, opts state.Options, objects Objects) state.State {
	s := state.New(node, opts)
	for _, a := range []state.SourceSynced{
		{Kind: state.KindNode, Nodes: objects.Nodes},
		{Kind: state.KindBGPConfiguration, Configs: objects.Configs},
		{Kind: state.KindBGPFilter, Filters: objects.Filters},
		{Kind: state.KindSecret, Secrets: objects.Secrets},
		{Kind: state.KindBGPPeer, Peers: objects.Peers},
		{Kind: state.KindIPPool, Pools: objects.Pools},
		{Kind: state.KindBlockAffinity, Affinities: objects.Affinities},
		{Kind: state.KindPod, Pods: objects.Pods},
		{Kind: state.KindService, Services: objects.Services},
		{Kind: state.KindEndpointSlice, EndpointSlices: objects.EndpointSlices},
	} {
		s = Reduce(s, a)
	}
	if len(objects.Learned) > 0 {
		s = Reduce(s, state.BestPathsChanged{Gen: s.Routing.SpeakerGen, Init: true, Prefixes: objects.Learned})
	}
	return s
}

// ObjectsOf returns the input objects a State currently holds, each kind
// sorted by name: for an invalid object whose last valid version is kept in
// force, that version (so FromScratch derives the same neighbors). The objects are copies of the top-level structs; their
// maps and slices are shared with the State and must not be modified.
func ObjectsOf(s state.State) Objects {
	var o Objects
	in := s.Inputs
	in.Peers.Range(func(_ string, e *state.PeerEntry) bool { o.Peers = append(o.Peers, *e.Spec); return true })
	in.Configs.Range(func(_ string, c *state.BGPConfiguration) bool { o.Configs = append(o.Configs, *c); return true })
	in.RejectedConfigs.Range(func(name string, c *state.BGPConfiguration) bool {
		if _, kept := in.Configs.Get(name); !kept { // never valid: FromScratch skips it the same way
			o.Configs = append(o.Configs, *c)
		}
		return true
	})
	slices.SortFunc(o.Configs, func(a, b state.BGPConfiguration) int { return strings.Compare(a.Name, b.Name) })
	in.Filters.Range(func(_ string, e *state.FilterEntry) bool { o.Filters = append(o.Filters, *e.Spec); return true })
	in.Nodes.Range(func(_ string, e *state.NodeEntry) bool { o.Nodes = append(o.Nodes, *e.Spec); return true })
	in.Secrets.Range(func(_ string, x *state.Secret) bool { o.Secrets = append(o.Secrets, *x); return true })
	in.Affinities.Range(func(_ string, e *state.AffinityEntry) bool { o.Affinities = append(o.Affinities, *e.Spec); return true })
	in.Pools.Range(func(_ string, e *state.PoolEntry) bool { o.Pools = append(o.Pools, *e.Spec); return true })
	in.Pods.Range(func(_ string, e *state.PodEntry) bool { o.Pods = append(o.Pods, *e.Spec); return true })
	in.Services.Range(func(_ string, e *state.ServiceEntry) bool { o.Services = append(o.Services, *e.Spec); return true })
	in.EndpointSlices.Range(func(_ string, x *state.EndpointSlice) bool {
		o.EndpointSlices = append(o.EndpointSlices, *x)
		return true
	})
	in.Learned.Range(func(_ string, b *state.BestPaths) bool { o.Learned = append(o.Learned, *b); return true })
	return o
}
