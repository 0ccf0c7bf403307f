package reducer

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// TestPrefixLimitProblem: a session ended over the prefix limit is a
// problem naming the neighbor, gone when the session is established
// again; another down reason is none (docs/routes.md §9.9).
func TestPrefixLimitProblem(t *testing.T) {
	s := state.New("node-a", state.Options{MaxPrefixes: 500})
	for _, a := range []state.Action{
		state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{{Name: "node-a", IPv4Address: "10.0.0.1/24"}}},
		state.SourceSynced{Kind: state.KindBGPPeer, Peers: []state.BGPPeer{{Name: "tor-a", PeerIP: "192.0.2.1", ASNumber: 65001}}},
		state.SourceSynced{Kind: state.KindBGPConfiguration},
		state.SourceSynced{Kind: state.KindBGPFilter},
		state.PeerApplied{Address: netip.MustParseAddr("192.0.2.1"), Gen: 1},
	} {
		s = Reduce(s, a)
	}
	addr := netip.MustParseAddr("192.0.2.1")
	problem := func() string {
		var out []string
		s.Out.Problems.Range(func(k string, ps []state.Problem) bool {
			for _, p := range ps {
				if strings.HasPrefix(k, "prefixlimit/") {
					out = append(out, p.Object+": "+p.Reason)
				}
			}
			return true
		})
		return strings.Join(out, "; ")
	}
	steps := []struct {
		state, reason string
		want          string
	}{
		{"established", "", ""},
		{"idle", "hold timer expired", ""},
		{"established", "", ""},
		{"idle", state.PrefixLimitReason, "bgppeer/tor-a: neighbor 192.0.2.1 sent more than 500 routes"},
		{"active", "", "bgppeer/tor-a: neighbor 192.0.2.1 sent more than 500 routes"},
		{"established", "", ""},
	}
	for i, st := range steps {
		s = Reduce(s, state.SessionStateChanged{Address: addr, State: st.state, Reason: st.reason})
		if got := problem(); st.want == "" && got != "" || !strings.HasPrefix(got, st.want) {
			t.Errorf("step %d (%s %q): problem %q, want %q", i, st.state, st.reason, got, st.want)
		}
	}
}
