package effects

import (
	"encoding/json"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// oneOfEach is a sample of every effect type.
func oneOfEach() []Effect {
	a := netip.MustParseAddr("10.0.0.2")
	n := &state.Neighbor{Address: a, Families: []string{"ipv4-unicast"}}
	return []Effect{StartServer{}, RestartServer{}, StopServer{}, WatchSecret{Name: "s"}, UnwatchSecret{Name: "s"},
		WatchServices{}, UnwatchServices{},
		AddPeer{Neighbor: n, Gen: 1}, UpdatePeer{Old: n, New: n, Gen: 2}, DeletePeer{Addr: a, Gen: 3},
		SetPolicy{Addr: a, Gen: 4}, DeletePolicy{Addr: a, Gen: 5},
		ReplaceRoute{Route: state.Route{Prefix: netip.MustParsePrefix("10.244.2.0/26"), Via: []netip.Addr{a}}, Gen: 8},
		RemoveRoute{Prefix: netip.MustParsePrefix("10.244.2.0/26"), Gen: 9},
		RescanRoutes{Seq: 10},
		AddPath{Path: &state.Path{Prefix: netip.MustParsePrefix("10.244.1.0/26"), NextHop: a}},
		DeletePath{Prefix: netip.MustParsePrefix("10.244.1.0/26")},
		SetAdd{Member: state.SetMember{Set: "peeragent-own-v4", Prefix: netip.MustParsePrefix("10.244.1.0/26"), Min: 26, Max: 32}},
		SetDel{Member: state.SetMember{Set: "peeragent-own-v4", Prefix: netip.MustParsePrefix("10.244.1.0/26"), Min: 26, Max: 32}},
		ResetOut{Addr: a, Family: "ipv4-unicast"}, Alarm{}, RecreatePeer{Addr: a}}
}

// TestRefAgreesWithString: an effect's kind is the first word of its
// String, its address is Address(), its generation the gen= it prints, and
// every kind belongs to exactly one effect type.
func TestRefAgreesWithString(t *testing.T) {
	seen := map[Kind]bool{}
	for _, e := range oneOfEach() {
		r, s := e.Ref(), e.String()
		if seen[r.Kind] {
			t.Errorf("%T: kind %s is taken by another effect type", e, r.Kind)
		}
		seen[r.Kind] = true
		if first := strings.FieldsFunc(s, func(c rune) bool { return c == ' ' || c == ':' })[0]; first != r.Kind.String() {
			t.Errorf("%T: kind %q, but String starts %q", e, r.Kind, first)
		}
		if r.Addr != e.Address() {
			t.Errorf("%T: Ref().Addr %v, Address() %v", e, r.Addr, e.Address())
		}
		if r.Gen != 0 && !strings.Contains(s, " gen="+strconv.FormatUint(r.Gen, 10)) {
			t.Errorf("%T: gen %d not in %q", e, r.Gen, s)
		}
	}
	for _, k := range Kinds() {
		if !seen[k] {
			t.Errorf("no effect type has kind %s: add it to oneOfEach", k)
		}
	}
}

func TestKindText(t *testing.T) {
	for _, k := range Kinds() {
		b, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		var back Kind
		if err := json.Unmarshal(b, &back); err != nil || back != k {
			t.Errorf("%s: round trip gave %v, %v", k, back, err)
		}
	}
	var k Kind
	if err := k.UnmarshalText([]byte("frobnicate")); err == nil {
		t.Error("an unknown kind name decoded without an error")
	}
}

func TestGroup(t *testing.T) {
	speaker, vpp, watches := Group(oneOfEach())
	if len(speaker) != 14 || len(vpp) != 3 || len(watches) != 5 {
		t.Errorf("Group: %d speaker, %d dataplane, %d watches and alarms; want 14, 3, 5", len(speaker), len(vpp), len(watches))
	}
}
