package gobgp

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	api "github.com/osrg/gobgp/v4/api"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// commLine renders a community statement: its conditions and actions.
func commLine(st *api.Statement) string {
	c, a := st.GetConditions(), st.GetActions()
	parts := []string{st.Name + ":"}
	for _, f := range c.GetAfiSafiIn() {
		parts = append(parts, "family", f.Afi.String()+"/"+f.Safi.String())
	}
	for _, m := range []struct {
		what string
		set  *api.MatchSet
	}{{"prefix", c.GetPrefixSet()}, {"community", c.GetCommunitySet()}, {"large-community", c.GetLargeCommunitySet()}, {"neighbor", c.GetNeighborSet()}} {
		if m.set != nil {
			parts = append(parts, m.what, m.set.Type.String(), m.set.Name)
		}
	}
	if c.GetRouteType() != api.Conditions_ROUTE_TYPE_UNSPECIFIED {
		parts = append(parts, c.GetRouteType().String())
	}
	parts = append(parts, "->")
	if x := a.GetCommunity(); x != nil {
		parts = append(parts, "community", x.Type.String(), strings.Join(x.Communities, ","))
	}
	if x := a.GetLargeCommunity(); x != nil {
		parts = append(parts, "large-community", x.Type.String(), strings.Join(x.Communities, ","))
	}
	return strings.Join(append(parts, a.GetRouteAction().String()), " ")
}

// TestCommunityObjects pins the statement of a community set
// (docs/routes.md §8.3 rules 3 and 12): a route of the set's family inside
// its prefix set that does not carry the value gets it; no route action,
// so Calico's statements after it decide.
func TestCommunityObjects(t *testing.T) {
	var got []string
	for _, set := range []string{
		state.SetName(state.CommSet("65000:100"), netip.MustParsePrefix("10.96.0.0/12")),
		state.SetName(state.CommSet("65000:0:7"), netip.MustParsePrefix("fd00::/64")),
	} {
		has, st := commObjects(set)
		got = append(got, fmt.Sprintf("%s %s %v", has.DefinedType, has.Name, has.List), commLine(st))
	}
	want := []string{
		"DEFINED_TYPE_COMMUNITY peeragent-comm-65000:100-v4 [^65000:100$]",
		"peeragent-comm-65000:100-v4: family AFI_IP/SAFI_UNICAST prefix TYPE_ANY peeragent-comm-65000:100-v4" +
			" community TYPE_INVERT peeragent-comm-65000:100-v4 -> community TYPE_ADD 65000:100 ROUTE_ACTION_UNSPECIFIED",
		"DEFINED_TYPE_LARGE_COMMUNITY peeragent-comm-65000:0:7-v6 [^65000:0:7$]",
		"peeragent-comm-65000:0:7-v6: family AFI_IP6/SAFI_UNICAST prefix TYPE_ANY peeragent-comm-65000:0:7-v6" +
			" large-community TYPE_INVERT peeragent-comm-65000:0:7-v6 -> large-community TYPE_ADD 65000:0:7 ROUTE_ACTION_UNSPECIFIED",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("objects (-want +got):\n%s", d)
	}
}

// speakerComm lists what a speaker holds of the community statements: the
// community policy's statements, every statement and defined set named
// peeragent-comm-*.
func speakerComm(t *testing.T, sp *speaker) []string {
	t.Helper()
	var out []string
	err := sp.Speaker().ListPolicy(t.Context(), &api.ListPolicyRequest{Name: communitiesPolicy}, func(p *api.Policy) {
		for _, st := range p.Statements {
			out = append(out, "policy "+commLine(st))
		}
	})
	if err != nil {
		t.Fatalf("ListPolicy: %v", err)
	}
	err = sp.Speaker().ListStatement(t.Context(), &api.ListStatementRequest{}, func(st *api.Statement) {
		if strings.HasPrefix(st.Name, state.SetComm) {
			out = append(out, "statement "+st.Name)
		}
	})
	if err != nil {
		t.Fatalf("ListStatement: %v", err)
	}
	for _, typ := range []api.DefinedType{api.DefinedType_DEFINED_TYPE_PREFIX, api.DefinedType_DEFINED_TYPE_COMMUNITY, api.DefinedType_DEFINED_TYPE_LARGE_COMMUNITY} {
		err := sp.Speaker().ListDefinedSet(t.Context(), &api.ListDefinedSetRequest{DefinedType: typ}, func(d *api.DefinedSet) {
			if !strings.HasPrefix(d.Name, state.SetComm) {
				return
			}
			var l []string
			for _, p := range d.Prefixes {
				l = append(l, fmt.Sprintf("%s %d..%d", p.IpPrefix, p.MaskLengthMin, p.MaskLengthMax))
			}
			out = append(out, fmt.Sprintf("set %s %s %v", typ, d.Name, append(l, d.List...)))
		})
		if err != nil {
			t.Fatalf("ListDefinedSet: %v", err)
		}
	}
	slices.Sort(out)
	return out
}

// TestReExportCarriesCommunities: three embedded speakers, a in the
// middle, as a route reflector's re-export. b originates the service
// 10.96.0.5/32 carrying 65000:1 of its own; a has 10.96.0.0/12 in its
// -svc- set, so it re-exports the route to c (docs/routes.md §8.3 rule 8),
// and a's own path 10.244.1.0/26 goes to c too. With the community sets
// of prefixAdvertisements [{10.96.0.0/12: 65000:100, 65000:0:7},
// {10.0.0.0/8: 65000:100}] c sees the re-exported route with b's 65000:1
// and a's 65000:100 (once, though two entries give it) and 65000:0:7; an
// own path already carrying 65000:100 gets it no second time. c then gets
// a BGPFilter of its own (a custom neighbor, its own Calico statements):
// the values still apply. The values change (65000:0:7 goes, 65000:200
// comes) and a soft reset out brings them to c; with every community set
// emptied, c sees b's 65000:1 alone, and a holds no community statement
// or set any more. No session is touched.
func TestReExportCarriesCommunities(t *testing.T) {
	s := startThree(t)
	a, b, c, ac := s.a, s.b, s.c, s.ac
	standard := state.Policy{CalicoExport: true}
	svcRange, wide := netip.MustParsePrefix("10.96.0.0/12"), netip.MustParsePrefix("10.0.0.0/8")
	member := func(base string, p netip.Prefix) state.SetMember {
		return state.SetMember{Set: state.SetName(base, p), Prefix: p, Min: uint8(p.Bits()), Max: 32}
	}
	std, large, wideStd := member(state.CommSet("65000:100"), svcRange), member(state.CommSet("65000:0:7"), svcRange), member(state.CommSet("65000:100"), wide)
	own := &state.Path{Prefix: netip.MustParsePrefix("10.244.1.0/26"), NextHop: netip.MustParseAddr(a.addr), Communities: []string{"65000:100"}}

	mustPaths(t, a.Executor, effects.SetAdd{Member: member(state.SetSvc, svcRange)},
		effects.SetAdd{Member: member(state.SetOwn, own.Prefix)}, effects.AddPath{Path: own},
		effects.SetAdd{Member: std}, effects.SetAdd{Member: large}, effects.SetAdd{Member: wideStd})
	s.peer(t, standard)
	mustPaths(t, b.Executor, effects.AddPath{Path: &state.Path{Prefix: netip.MustParsePrefix("10.96.0.5/32"),
		NextHop: netip.MustParseAddr(b.addr), Communities: []string{"65000:1"}}})
	waitPaths(t, c,
		"10.244.1.0/26 nh=127.0.0.1 communities=65000:100",
		"10.96.0.5/32 nh=127.0.0.1 communities=65000:1,65000:100,65000:0:7")
	wantComm := []string{
		"policy peeragent-comm-65000:0:7-v4: family AFI_IP/SAFI_UNICAST prefix TYPE_ANY peeragent-comm-65000:0:7-v4 large-community TYPE_INVERT peeragent-comm-65000:0:7-v4 -> large-community TYPE_ADD 65000:0:7 ROUTE_ACTION_UNSPECIFIED",
		"policy peeragent-comm-65000:100-v4: family AFI_IP/SAFI_UNICAST prefix TYPE_ANY peeragent-comm-65000:100-v4 community TYPE_INVERT peeragent-comm-65000:100-v4 -> community TYPE_ADD 65000:100 ROUTE_ACTION_UNSPECIFIED",
		"set DEFINED_TYPE_COMMUNITY peeragent-comm-65000:100-v4 [^65000:100$]",
		"set DEFINED_TYPE_LARGE_COMMUNITY peeragent-comm-65000:0:7-v4 [^65000:0:7$]",
		"set DEFINED_TYPE_PREFIX peeragent-comm-65000:0:7-v4 [10.96.0.0/12 12..32]",
		"set DEFINED_TYPE_PREFIX peeragent-comm-65000:100-v4 [10.0.0.0/8 8..32 10.96.0.0/12 12..32]",
		"statement peeragent-comm-65000:0:7-v4",
		"statement peeragent-comm-65000:100-v4",
	}
	if d := cmp.Diff(wantComm, speakerComm(t, a)); d != "" {
		t.Errorf("a's community objects (-want +got):\n%s", d)
	}
	ma, mc := a.events.mark(), c.events.mark()

	// c gets a filter of its own: a custom neighbor.
	filtered := standard
	filtered.Export = []state.Rule{{Filter: "f", Action: "reject", Operator: "Equal", Prefix: netip.MustParsePrefix("10.99.0.0/24")}}
	mustApply(t, a.Executor, effects.SetPolicy{Addr: ac.Address, Policy: filtered, Gen: 2})
	if n := members(t, a); len(n) != 1 || n[0] != "127.0.0.3/32" {
		t.Fatalf("custom neighbors %v, want c's", n)
	}
	changed := member(state.CommSet("65000:200"), svcRange)
	mustPaths(t, a.Executor, effects.SetAdd{Member: changed}, effects.SetDel{Member: large},
		effects.ResetOut{Addr: ac.Address, Family: "ipv4-unicast"})
	waitPaths(t, c,
		"10.244.1.0/26 nh=127.0.0.1 communities=65000:100",
		"10.96.0.5/32 nh=127.0.0.1 communities=65000:1,65000:100,65000:200")

	// The narrower entry giving 65000:100 goes; the wider one still does.
	mustPaths(t, a.Executor, effects.SetDel{Member: std}, effects.ResetOut{Addr: ac.Address, Family: "ipv4-unicast"})
	waitPaths(t, c,
		"10.244.1.0/26 nh=127.0.0.1 communities=65000:100",
		"10.96.0.5/32 nh=127.0.0.1 communities=65000:1,65000:100,65000:200")

	own2 := *own
	own2.Communities = nil
	mustPaths(t, a.Executor, effects.AddPath{Path: &own2}, effects.SetDel{Member: wideStd}, effects.SetDel{Member: changed},
		effects.ResetOut{Addr: ac.Address, Family: "ipv4-unicast"})
	waitPaths(t, c,
		"10.244.1.0/26 nh=127.0.0.1 communities=",
		"10.96.0.5/32 nh=127.0.0.1 communities=65000:1")
	if got := speakerComm(t, a); len(got) != 0 {
		t.Errorf("a still holds community objects: %v", got)
	}
	if evs := a.events.since(ma, c.addr); len(evs) > 0 {
		t.Errorf("the changes touched the session a-c on a: %s", a.events.describe(c.addr))
	}
	if evs := c.events.since(mc, a.addr); len(evs) > 0 {
		t.Errorf("the changes touched the session a-c on c: %s", c.events.describe(a.addr))
	}

	// A value that comes back is made again (GoBGP forgot the statement).
	mustPaths(t, a.Executor, effects.SetAdd{Member: std}, effects.ResetOut{Addr: ac.Address, Family: "ipv4-unicast"})
	waitPaths(t, c,
		"10.244.1.0/26 nh=127.0.0.1 communities=",
		"10.96.0.5/32 nh=127.0.0.1 communities=65000:1,65000:100")
}
