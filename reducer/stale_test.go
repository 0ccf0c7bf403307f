package reducer

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// TestWithStale: a stale path stays through an event that leaves it out
// (the withdrawals of configuring its neighbor anew) and is replaced only
// by a path of the same neighbor (docs/routes.md §9.5 rule 2); with no
// stale path the event's paths are taken as they are (the same slice).
func TestWithStale(t *testing.T) {
	b, c := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	pb := state.LearnedPath{NextHops: []netip.Addr{b}, Neighbor: b}
	pc := state.LearnedPath{NextHops: []netip.Addr{c}, Neighbor: c}
	sb := pb
	sb.Stale = true
	cases := []struct {
		name           string
		old, now, want []state.LearnedPath
	}{
		{"no-stale", []state.LearnedPath{pb, pc}, []state.LearnedPath{pc}, []state.LearnedPath{pc}},
		{"withdrawn-stays", []state.LearnedPath{sb, pc}, []state.LearnedPath{pc}, []state.LearnedPath{pc, sb}},
		{"all-withdrawn", []state.LearnedPath{sb}, nil, []state.LearnedPath{sb}},
		{"advertised-again", []state.LearnedPath{sb, pc}, []state.LearnedPath{pb, pc}, []state.LearnedPath{pb, pc}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := withStale(tc.old, tc.now)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("withStale = %+v, want %+v", got, tc.want)
			}
			if len(tc.now) > 0 && len(got) == len(tc.now) && &got[0] != &tc.now[0] {
				t.Error("nothing kept, but the paths were copied")
			}
		})
	}
}

// TestSameSession: only what changes in place (the policy, the prefix
// limit) or bookkeeping leaves a neighbor's wait for its stale paths; a
// setting that resets the session ends it (docs/routes.md §9.5 rule 2,
// effects.Classify).
func TestSameSession(t *testing.T) {
	base := &state.Neighbor{Address: netip.MustParseAddr("10.0.0.2"), PeerASN: 64512, LocalASN: 64512,
		GracefulRestartSeconds: 120, Families: []string{"ipv4-unicast"}, MaxPrefixes: 100}
	cases := []struct {
		name   string
		change func(*state.Neighbor)
		want   bool
	}{
		{"identical", func(*state.Neighbor) {}, true},
		{"policy", func(n *state.Neighbor) { n.Policy = state.Policy{NextHop: "self"} }, true},
		{"max-prefixes", func(n *state.Neighbor) { n.MaxPrefixes = 200 }, true},
		{"origin", func(n *state.Neighbor) { n.Origin = "bgppeer/x" }, true},
		{"password", func(n *state.Neighbor) { n.Password = state.NewPassword("p") }, false},
		{"peer-as", func(n *state.Neighbor) { n.PeerASN = 65001 }, false},
		{"graceful-restart", func(n *state.Neighbor) { n.GracefulRestartSeconds = 60 }, false},
		{"families", func(n *state.Neighbor) { n.Families = []string{"ipv4-unicast", "ipv6-unicast"} }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := *base
			n.Families = append([]string(nil), base.Families...)
			tc.change(&n)
			if got := sameSession(base, &n); got != tc.want {
				t.Errorf("sameSession = %v, want %v", got, tc.want)
			}
		})
	}
}
