package reducer_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// The benchmark cluster: ten dual-stack nodes in the mesh and n BGPPeers,
// all applying to node-a (the worst case: n neighbors on this node), each
// with its own peerIP; every tenth uses its own password Secret.
const benchNodes = 10

var benchSizes = []int{100, 1000, 10000, 100000}

func benchObjects(n int) []state.Action {
	var nodes []state.Node
	for i := 0; i < benchNodes; i++ {
		nodes = append(nodes, state.Node{Name: fmt.Sprintf("node-%c", 'a'+i),
			Labels:      map[string]string{"rack": fmt.Sprint(i % 3)},
			IPv4Address: fmt.Sprintf("10.0.0.%d/24", i+1), IPv6Address: fmt.Sprintf("fd00::%d/64", i+1)})
	}
	var peers []state.BGPPeer
	var secrets []state.Secret
	for i := 0; i < n; i++ {
		p := state.BGPPeer{Name: fmt.Sprintf("peer-%06d", i), Node: "node-a", ASNumber: 65000 + int64(i%100),
			PeerIP: netip.AddrFrom4([4]byte{172, byte(16 + i>>16), byte(i >> 8), byte(i)}).String()}
		if i%10 == 0 {
			p.Password = &state.SecretKeyRef{Name: fmt.Sprintf("pw-%06d", i), Key: "password"}
			secrets = append(secrets, state.Secret{Name: p.Password.Name,
				Data: map[string]state.Password{"password": state.NewPassword("initial-value")}})
		}
		peers = append(peers, p)
	}
	acts := []state.Action{
		state.SourceSynced{Kind: state.KindNode, Nodes: nodes},
		state.SourceSynced{Kind: state.KindBGPConfiguration},
		state.SourceSynced{Kind: state.KindBGPFilter},
		state.SourceSynced{Kind: state.KindSecret, Secrets: secrets},
		state.SourceSynced{Kind: state.KindBGPPeer, Peers: peers},
	}
	// Every other gating source, empty: until all have synced, Diff
	// holds every effect back (docs/semantics.md §5).
	for _, k := range state.SyncedKinds {
		switch k {
		case state.KindNode, state.KindBGPConfiguration, state.KindBGPFilter, state.KindSecret, state.KindBGPPeer:
		default:
			acts = append(acts, state.SourceSynced{Kind: k})
		}
	}
	return acts
}

func fromScratch(acts []state.Action) state.State {
	s := state.New("node-a", state.Options{})
	for _, a := range acts {
		s = reducer.Reduce(s, a)
	}
	return s
}

// step runs one Reduce+Diff and fails the benchmark if it had no effect
// when one was expected: a benchmark of a no-op measures nothing.
func step(b *testing.B, s state.State, a state.Action, wantEffects bool) state.State {
	next := reducer.Reduce(s, a)
	effs := effects.Diff(s, next)
	if wantEffects && len(effs) == 0 {
		b.Fatalf("%s produced no effect", a.ActionName())
	}
	return next
}

func benchEach(b *testing.B, fn func(b *testing.B, s state.State)) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("peers=%d", n), func(b *testing.B) {
			s := fromScratch(benchObjects(n))
			b.ReportAllocs()
			b.ResetTimer()
			fn(b, s)
		})
	}
}

func BenchmarkPeerUpdate(b *testing.B) {
	benchEach(b, func(b *testing.B, s state.State) {
		p := state.BGPPeer{Name: "peer-000042", Node: "node-a", ASNumber: 65042, PeerIP: "172.16.0.42"}
		for i := 0; i < b.N; i++ {
			p.TTLSecurity = int32(1 + i%2)
			s = step(b, s, state.PeerUpserted{Peer: p}, true)
		}
	})
}

func BenchmarkSecretRotation(b *testing.B) {
	benchEach(b, func(b *testing.B, s state.State) {
		for i := 0; i < b.N; i++ {
			sec := state.Secret{Name: "pw-000050", Data: map[string]state.Password{
				"password": state.NewPassword(fmt.Sprintf("rotated-%d", i%2))}}
			s = step(b, s, state.SecretUpserted{Secret: sec}, true)
		}
	})
}

func BenchmarkRemoteNodeLabel(b *testing.B) {
	benchNodeLabel(b, state.Node{Name: "node-c", IPv4Address: "10.0.0.3/24", IPv6Address: "fd00::3/64"})
}

func BenchmarkLocalNodeLabel(b *testing.B) {
	benchNodeLabel(b, state.Node{Name: "node-a", IPv4Address: "10.0.0.1/24", IPv6Address: "fd00::1/64"})
}

// benchNodeLabel upserts node with its rack label flipping each time.
func benchNodeLabel(b *testing.B, node state.Node) {
	benchEach(b, func(b *testing.B, s state.State) {
		for i := 0; i < b.N; i++ {
			n := node
			n.Labels = map[string]string{"rack": fmt.Sprint(i % 2)}
			s = step(b, s, state.NodeUpserted{Node: n}, false)
		}
	})
}

// BenchmarkFromScratch is the old way: derive everything from the full
// object lists, then diff against the previous State.
func BenchmarkFromScratch(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("peers=%d", n), func(b *testing.B) {
			acts := benchObjects(n)
			prev := fromScratch(acts)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				next := fromScratch(acts)
				_ = effects.Diff(prev, next)
			}
		})
	}
}
