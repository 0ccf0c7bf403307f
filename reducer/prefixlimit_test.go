package reducer

import (
	"fmt"
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

// TestPrefixLimitProblemSaysWhatToRaise: a BGPPeer's neighbor over its
// limit names both knobs, the flag and the BGPPeer's annotation; a mesh
// neighbor, which has no BGPPeer to annotate, names the flag alone.
func TestPrefixLimitProblemSaysWhatToRaise(t *testing.T) {
	s := state.New("node-a", state.Options{MaxPrefixes: 500})
	for _, a := range []state.Action{
		state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{
			{Name: "node-a", IPv4Address: "10.0.0.1/24"}, {Name: "node-b", IPv4Address: "10.0.0.2/24"}}},
		state.SourceSynced{Kind: state.KindBGPPeer, Peers: []state.BGPPeer{{Name: "tor-a", PeerIP: "192.0.2.1", ASNumber: 65001}}},
		state.SourceSynced{Kind: state.KindBGPConfiguration},
		state.SourceSynced{Kind: state.KindBGPFilter},
	} {
		s = Reduce(s, a)
	}
	for addr, want := range map[string]string{
		"192.0.2.1": "(raise --max-prefixes or the BGPPeer's annotation " + state.AnnotationMaxPrefixes + ", or fix the peer)",
		"10.0.0.2":  "(raise --max-prefixes, or fix the peer)",
	} {
		s = Reduce(s, state.SessionStateChanged{Address: netip.MustParseAddr(addr), State: "idle", Reason: state.PrefixLimitReason})
		var got []string
		s.Out.Problems.Range(func(k string, ps []state.Problem) bool {
			for _, p := range ps {
				if strings.HasPrefix(k, "prefixlimit/") && strings.Contains(p.Reason, addr+" ") {
					got = append(got, p.Reason)
				}
			}
			return true
		})
		if len(got) != 1 || !strings.HasSuffix(got[0], want) {
			t.Errorf("%s: problems %q, want one ending %q", addr, got, want)
		}
	}
}

// TestMaxPrefixesAnnotation: the BGPPeer annotation overrides --max-prefixes
// for its neighbor (docs/routes.md §9.9) when it is a whole number from 1
// to 4294967295; any other text is a problem naming the BGPPeer and the
// annotation, the neighbor keeps the flag's limit, and the peer is never
// dropped nor held at a last valid version for it.
func TestMaxPrefixesAnnotation(t *testing.T) {
	const flag = 777
	cases := []struct {
		name, text string
		absent     bool
		want       uint32
		bad        bool
	}{
		{name: "absent", absent: true, want: flag},
		{name: "one", text: "1", want: 1},
		{name: "below-the-flag", text: "500", want: 500},
		{name: "above-the-flag", text: "100000", want: 100000},
		{name: "leading-zero", text: "0500", want: 500},
		{name: "largest", text: "4294967295", want: 4294967295},
		{name: "zero-is-not-unlimited", text: "0", want: flag, bad: true},
		{name: "too-big", text: "4294967296", want: flag, bad: true},
		{name: "negative", text: "-1", want: flag, bad: true},
		{name: "plus-sign", text: "+5", want: flag, bad: true},
		{name: "spaces", text: " 500", want: flag, bad: true},
		{name: "exponent", text: "1e3", want: flag, bad: true},
		{name: "words", text: "lots", want: flag, bad: true},
		{name: "empty", text: "", want: flag, bad: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := state.BGPPeer{Name: "tor-a", PeerIP: "192.0.2.1", ASNumber: 65001}
			if !tc.absent {
				p.Annotations = map[string]string{state.AnnotationMaxPrefixes: tc.text}
			}
			s := state.New("node-a", state.Options{MaxPrefixes: flag})
			for _, a := range []state.Action{
				state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{{Name: "node-a", IPv4Address: "10.0.0.1/24"}}},
				state.SourceSynced{Kind: state.KindBGPPeer, Peers: []state.BGPPeer{p}},
				state.SourceSynced{Kind: state.KindBGPConfiguration},
				state.SourceSynced{Kind: state.KindBGPFilter},
			} {
				s = Reduce(s, a)
			}
			n, ok := s.Out.Neighbors.Get(state.AddrKey(netip.MustParseAddr("192.0.2.1")))
			if !ok || !n.Active() {
				t.Fatalf("no active neighbor: %+v", n)
			}
			if n.MaxPrefixes != tc.want {
				t.Errorf("maxPrefixes %d, want %d", n.MaxPrefixes, tc.want)
			}
			var probs []string
			for _, pr := range s.Dump().Problems {
				probs = append(probs, pr.Object+": "+pr.Reason)
			}
			got := strings.Join(probs, "; ")
			want := fmt.Sprintf("bgppeer/tor-a: annotation %s %q is not a whole number", state.AnnotationMaxPrefixes, tc.text)
			if tc.bad != strings.HasPrefix(got, want) || !tc.bad && got != "" || len(probs) > 1 {
				t.Errorf("problems %q, want one starting %q: %v", got, want, tc.bad)
			}
		})
	}
}
