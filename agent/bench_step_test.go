package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/fakespeaker"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// BenchmarkStepBookkeeping: what the loop's step does for each action
// besides Reduce and Diff (the journal, the action and flap metrics, the
// action and session logs, logged at info as the agent runs, into
// io.Discard), over one mesh node's start of 50 nodes (reducer
// BenchmarkMeshStart's actions: every session through active, opensent,
// openconfirm, established, a best path, an End-of-RIB and the results),
// each action a batch of its own. Reported per op: the whole start.
func BenchmarkStepBookkeeping(b *testing.B) {
	steps := meshSteps(b, 50)
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	m, j := NewMetrics(), NewJournal(256)
	at := time.Unix(1_700_000_000, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, st := range steps {
			m.sessionChanged(st.before, st.after, st.a)
			m.action(st.a)
			j.Add(st.a, at)
			logActions(log, st.before, []state.Action{st.a})
		}
	}
	b.ReportMetric(float64(len(steps)), "actions/op")
}

type meshStep struct {
	before, after state.State
	a             state.Action
}

// meshSteps reduces one node's start in a mesh of n nodes (one /26 block
// each), the speaker and the dataplane confirming every effect, and
// returns each step.
func meshSteps(b *testing.B, n int) []meshStep {
	addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 200, byte(i >> 8), byte(i)}) }
	block := func(i int) netip.Prefix {
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(i >> 2), byte(i&3) << 6}), 26)
	}
	var nodes []state.Node
	var affs []state.BlockAffinity
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("node-%d", i)
		nodes = append(nodes, state.Node{Name: name, IPv4Address: addr(i).String() + "/16"})
		affs = append(affs, state.BlockAffinity{Name: name + "-b", Node: name, CIDR: block(i).String(), State: "confirmed"})
	}
	s := state.New("node-1", state.Options{})
	var steps []meshStep
	dp := &instantRoutes{want: -1}
	var do func(a state.Action)
	do = func(a state.Action) {
		next := reducer.Reduce(s, a)
		effs := effects.Diff(s, next)
		steps = append(steps, meshStep{before: s, after: next, a: a})
		s = next
		for _, r := range append(fakespeaker.Ack(effs), effects.ApplyRoutes(context.Background(), dp, effs)...) {
			do(r)
		}
	}
	for _, a := range []state.Action{
		state.SourceSynced{Kind: state.KindBGPConfiguration, Configs: []state.BGPConfiguration{{Name: "default", ASNumber: 64512}}},
		state.SourceSynced{Kind: state.KindNode, Nodes: nodes},
		state.SourceSynced{Kind: state.KindBGPPeer},
		state.SourceSynced{Kind: state.KindBGPFilter},
		state.SourceSynced{Kind: state.KindPod},
		state.SourceSynced{Kind: state.KindIPPool, Pools: []state.IPPool{{Name: "default-ipv4-ippool", CIDR: "10.244.0.0/16"}}},
		state.SourceSynced{Kind: state.KindBlockAffinity, Affinities: affs},
		state.RoutesListed{Dataplane: "linux"},
	} {
		do(a)
	}
	gen := s.Routing.SpeakerGen
	for i := 2; i <= n; i++ {
		for _, st := range []string{"active", "opensent", "openconfirm", "established"} {
			do(state.SessionStateChanged{Address: addr(i), State: st})
		}
		do(state.BestPathsChanged{Gen: gen, Prefixes: []state.BestPaths{{Prefix: block(i),
			Paths: []state.LearnedPath{{NextHops: []netip.Addr{addr(i)}, Neighbor: addr(i)}}}}})
		do(state.EndOfRIBReceived{Gen: gen, Neighbor: addr(i), Family: "ipv4-unicast"})
	}
	if !s.Routing.Settled {
		b.Fatal("the mesh start did not settle")
	}
	return steps
}
