package reducer

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// advertisingState is node-a with one own block, one borrowed address, a
// pool, the mesh peer node-b and a ToR, everything synced.
func advertisingState() state.State {
	return FromScratch(localNode, state.Options{}, Objects{
		Nodes:   []state.Node{{Name: "node-a", IPv4Address: "10.0.0.1/24"}, {Name: "node-b", IPv4Address: "10.0.0.2/24"}},
		Configs: []state.BGPConfiguration{{Name: "default", ASNumber: 64512}},
		Peers:   []state.BGPPeer{{Name: "tor", PeerIP: "192.0.2.1", ASNumber: 65001}},
		Pools: []state.IPPool{{Name: "default-pool", CIDR: "10.244.0.0/16"},
			{Name: "other-pool", CIDR: "10.99.0.0/16"}},
		Affinities: []state.BlockAffinity{{Name: "a-1", Node: "node-a", CIDR: "10.244.1.0/26", State: "confirmed"}},
		Pods:       []state.Pod{{Namespace: "default", Name: "web", Phase: "Running", PodIPs: []string{"10.244.2.7"}}},
	})
}

// TestUnrelatedChurnNoPathCalls: 1,000 changes that decide nothing about
// paths (docs/routes.md §10 "Zero calls") give no path, set or reset-out
// effect, and those that touch no advertising input leave the advertised
// map itself shared (nothing was derived again).
func TestUnrelatedChurnNoPathCalls(t *testing.T) {
	s := advertisingState()
	if s.Out.Advertised.Len() != 2 {
		t.Fatalf("setup advertises %d paths, want 2", s.Out.Advertised.Len())
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		var a state.Action
		switch r.IntN(7) {
		case 0:
			a = state.BlockAffinityUpserted{Affinity: state.BlockAffinity{Name: fmt.Sprintf("b-%d", r.IntN(20)), Node: "node-b",
				CIDR: fmt.Sprintf("10.244.%d.0/26", 10+r.IntN(20)), State: []string{"confirmed", "pending"}[r.IntN(2)]}}
		case 1:
			a = state.BlockAffinityDeleted{Name: fmt.Sprintf("b-%d", r.IntN(20))}
		case 2:
			a = state.PodUpserted{Pod: state.Pod{Namespace: "default", Name: fmt.Sprintf("p-%d", r.IntN(20)), Phase: "Pending"}}
		case 3:
			a = state.PodDeleted{Namespace: "default", Name: fmt.Sprintf("p-%d", r.IntN(20))}
		case 4:
			a = state.IPPoolUpserted{Pool: state.IPPool{Name: "other-pool", CIDR: "10.99.0.0/16", Disabled: r.IntN(2) == 0}}
		case 5:
			a = state.SecretUpserted{Secret: state.Secret{Name: "unrelated", Data: map[string]state.Password{"k": state.NewPassword(fmt.Sprint(i))}}}
		default:
			a = state.PeerUpserted{Peer: state.BGPPeer{Name: "tor-2", PeerIP: "192.0.2.2", ASNumber: int64(65002 + r.IntN(3))}}
		}
		n := Reduce(s, a)
		for _, e := range effects.Diff(s, n) {
			switch e.Ref().Kind {
			case effects.KindAddPath, effects.KindDeletePath, effects.KindSetAdd, effects.KindSetDel, effects.KindResetOut:
				t.Fatalf("change %d (%s) gave %s", i, a.ActionName(), e)
			}
		}
		if _, peer := a.(state.PeerUpserted); !peer && n.Out.Advertised != s.Out.Advertised {
			t.Fatalf("change %d (%s) derived the advertised paths again", i, a.ActionName())
		}
		s = n
	}
}

func TestParseCommunity(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"65000:100", "65000:100", true}, {"0065000:0100", "65000:100", true}, {"65536:1", "", false},
		{"4294967295:0:7", "4294967295:0:7", true}, {"4294967296:0:7", "", false}, {"1:2:3:4", "", false},
		{"1:", "", false}, {"a:b", "", false}, {"-1:2", "", false}, {"+1:2", "", false}, {"name", "", false},
	} {
		got, ok := parseCommunity(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("parseCommunity(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
