package gobgp

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// agent is a miniature of the agent loop: Reduce, Diff, execute the
// speaker's effects, feed the results and session events back.
type agent struct {
	t  *testing.T
	sp *speaker
	mu sync.Mutex
	s  state.State
}

func newAgent(t *testing.T, node string, sp *speaker) *agent {
	ag := &agent{t: t, sp: sp, s: state.New(node, state.Options{})}
	sp.events.forward(ag.dispatch)
	return ag
}

func (ag *agent) dispatch(a state.Action) {
	ag.mu.Lock()
	prev := ag.s
	ag.s = reducer.Reduce(ag.s, a)
	speaker, _, _ := effects.Group(effects.Diff(prev, ag.s))
	ag.mu.Unlock()
	if len(speaker) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, r := range ag.sp.Execute(ctx, speaker) {
		ag.dispatch(r)
	}
}

// session is the agent's view of its neighbor at addr.
func (ag *agent) session(addr string) state.Session {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	s, ok := ag.s.Out.Sessions.Get(state.AddrKey(netip.MustParseAddr(addr)))
	if !ok {
		return state.Session{}
	}
	return *s
}

// TestMeshViaReducer: two nodes' agents, each with its own State, reducer,
// Diff and executor, form Calico's node-to-node mesh over MD5 (the mesh
// password arriving after the neighbor, which waits for it), and each
// State ends with its neighbor's phase established and each speaker
// holding both nodes' blocks.
func TestMeshViaReducer(t *testing.T) {
	requireLoopback(t, "127.0.0.2")
	a, b := newSpeaker(t, "127.0.0.1"), newSpeaker(t, "127.0.0.2")
	ref := &state.SecretKeyRef{Name: "bgp-mesh", Key: "password"}
	inputs := []state.Action{
		state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{
			{Name: "node-a", IPv4Address: "127.0.0.1/8"}, {Name: "node-b", IPv4Address: "127.0.0.2/8"},
		}},
		state.SourceSynced{Kind: state.KindBGPConfiguration, Configs: []state.BGPConfiguration{
			{Name: "default", NodeMeshPassword: ref},
			{Name: "node.node-a", ListenPort: int32(a.port)}, {Name: "node.node-b", ListenPort: int32(b.port)},
		}},
		state.SourceSynced{Kind: state.KindBGPPeer},
		state.SourceSynced{Kind: state.KindBGPFilter},
		state.SourceSynced{Kind: state.KindIPPool, Pools: []state.IPPool{{Name: "default-pool", CIDR: "10.244.0.0/16"}}},
		// each agent keeps its own node's affinity (docs/routes.md §8.1)
		state.SourceSynced{Kind: state.KindBlockAffinity, Affinities: []state.BlockAffinity{
			{Name: "a-block", Node: "node-a", CIDR: "10.244.1.0/26", State: "confirmed"},
			{Name: "b-block", Node: "node-b", CIDR: "10.244.2.0/26", State: "confirmed"},
		}},
		state.SourceSynced{Kind: state.KindPod},
		state.SecretUpserted{Secret: state.Secret{Name: "bgp-mesh", Data: map[string]state.Password{"password": state.NewPassword("mesh-md5-key")}}},
	}
	agents := []*agent{newAgent(t, "node-a", a), newAgent(t, "node-b", b)}
	for _, ag := range agents {
		for _, in := range inputs {
			ag.dispatch(in)
		}
	}
	for i, ag := range agents {
		remote := []string{"127.0.0.2", "127.0.0.1"}[i]
		ok := pollUntil(establishTimeout, func() bool {
			s := ag.session(remote)
			return s.Phase == state.PhaseEstablished && s.BGP == "established"
		})
		if !ok {
			t.Fatalf("agent %d: session with %s is %+v; events: %s", i, remote, ag.session(remote), ag.sp.events.describe(remote))
		}
	}
	if got := fmt.Sprint(agents[0].session("127.0.0.2").Applied.Passive); got != "true" {
		t.Errorf("node-a should be passive toward the higher address, got %s", got)
	}
	// Each advertises its own block and learns the other's (docs/routes.md
	// §8.1, §8.3 rule 4).
	waitRIB(t, a, "10.244.1.0/26", "10.244.2.0/26")
	waitRIB(t, b, "10.244.1.0/26", "10.244.2.0/26")
}
