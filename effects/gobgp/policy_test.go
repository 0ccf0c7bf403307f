package gobgp

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	api "github.com/osrg/gobgp/v4/api"

	"github.com/peeragent/peeragent/state"
)

// render writes policy objects one line each, in GoBGP's order, so that
// the mapping reads like a config. Every statement's neighbor-set and
// family conditions are checked here rather than printed.
func render(t *testing.T, a netip.Addr, o policyObjects) []string {
	t.Helper()
	var out []string
	if o.neighbor != nil {
		out = append(out, fmt.Sprintf("neighbor-set %s %v", o.neighbor.Name, o.neighbor.List))
		out = append(out, fmt.Sprintf("neighbor-set %s %v", o.filter.Name, o.filter.List))
	} else if len(o.assigned) > 0 {
		t.Errorf("policies without a neighbor set")
	}
	for _, s := range o.prefixes {
		p := s.Prefixes[0]
		out = append(out, fmt.Sprintf("prefix-set %s %s %d..%d", s.Name, p.IpPrefix, p.MaskLengthMin, p.MaskLengthMax))
	}
	for _, d := range o.assigned {
		out = append(out, fmt.Sprintf("%s %s", strings.ToLower(strings.TrimPrefix(d.dir.String(), "POLICY_DIRECTION_")), d.policy.Name))
		for _, st := range d.policy.Statements {
			c := st.Conditions
			guard := o.filter.Name // the rules' and next-hop's statements
			if strings.Contains(st.Name, "-export-calico-") {
				guard = o.neighbor.Name
			}
			if c.NeighborSet.GetName() != guard || c.NeighborSet.Type != api.MatchSet_TYPE_ANY {
				t.Errorf("%s: neighbor condition %v", st.Name, c.NeighborSet)
			}
			if fam := unicastFamily(a); len(c.AfiSafiIn) != 1 || c.AfiSafiIn[0].Afi != fam.Afi || c.AfiSafiIn[0].Safi != fam.Safi {
				t.Errorf("%s: family condition %v", st.Name, c.AfiSafiIn)
			}
			out = append(out, "  "+statementLine(st))
		}
	}
	return out
}

func statementLine(st *api.Statement) string {
	parts := []string{st.Name + ":"}
	c, act := st.Conditions, st.Actions
	if c.PrefixSet != nil {
		op := "in"
		if c.PrefixSet.Type == api.MatchSet_TYPE_INVERT {
			op = "not-in"
		}
		parts = append(parts, op, c.PrefixSet.Name)
	}
	if c.RouteType != api.Conditions_ROUTE_TYPE_UNSPECIFIED {
		parts = append(parts, "route-type", strings.ToLower(strings.TrimPrefix(c.RouteType.String(), "ROUTE_TYPE_")))
	}
	switch {
	case act.Nexthop.GetSelf():
		parts = append(parts, "next-hop self")
	case act.Nexthop.GetUnchanged():
		parts = append(parts, "next-hop unchanged")
	}
	return strings.Join(append(parts, "->", routeActionName(act.RouteAction)), " ")
}

func TestObjectsFor(t *testing.T) {
	v4, v6 := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("fd00::2")
	rule := func(action, op, cidr string, lo, hi uint8) state.Rule {
		r := state.Rule{Filter: "f", Action: action, Operator: op, MinLen: lo, MaxLen: hi}
		if cidr != "" {
			r.Prefix = netip.MustParsePrefix(cidr)
		}
		return r
	}
	// objects are the neighbor's two sets, which every policy with objects
	// of its own has, then lines.
	objects := func(addr netip.Addr, lines ...string) []string {
		set := netip.PrefixFrom(addr, addr.BitLen())
		return append([]string{
			fmt.Sprintf("neighbor-set peeragent-%s-neighbor [%s]", addr, set),
			fmt.Sprintf("neighbor-set peeragent-%s-filter [%s]", addr, set),
		}, lines...)
	}
	// calicoExport are Calico's export statements, in a neighbor's own
	// export policy when it has one.
	calicoExport := []string{
		"  peeragent-10.0.0.2-export-calico-local: route-type local -> accept",
		"  peeragent-10.0.0.2-export-calico-own: in peeragent-own-v4 -> reject",
		"  peeragent-10.0.0.2-export-calico-nobgp: in peeragent-nobgp-v4 -> reject",
		"  peeragent-10.0.0.2-export-calico-rrsvc: in peeragent-rrsvc-v4 -> accept",
		"  peeragent-10.0.0.2-export-calico-svc: in peeragent-svc-v4 -> accept",
		"  peeragent-10.0.0.2-export-calico-pools: in peeragent-pools-v4 -> accept",
		"  peeragent-10.0.0.2-export-calico-reject: -> reject",
	}
	tests := []struct {
		name   string
		addr   netip.Addr
		policy state.Policy
		want   []string
	}{
		{"operators-in-user-order", v4, state.Policy{Import: []state.Rule{
			rule("reject", "NotIn", "10.10.0.0/16", 0, 0),
			rule("accept", "Equal", "10.20.0.0/16", 0, 0),
			rule("reject", "NotEqual", "10.30.1.0/24", 0, 0),
			rule("accept", "In", "10.40.0.0/16", 0, 0),
		}}, objects(v4,
			"prefix-set peeragent-10.0.0.2-import-1-prefix 10.10.0.0/16 16..32",
			"prefix-set peeragent-10.0.0.2-import-2-prefix 10.20.0.0/16 16..16",
			"prefix-set peeragent-10.0.0.2-import-3-prefix 10.30.1.0/24 24..24",
			"prefix-set peeragent-10.0.0.2-import-4-prefix 10.40.0.0/16 16..32",
			"import peeragent-filters-import",
			"  peeragent-10.0.0.2-import-1: not-in peeragent-10.0.0.2-import-1-prefix -> reject",
			"  peeragent-10.0.0.2-import-2: in peeragent-10.0.0.2-import-2-prefix -> accept",
			"  peeragent-10.0.0.2-import-3: not-in peeragent-10.0.0.2-import-3-prefix -> reject",
			"  peeragent-10.0.0.2-import-4: in peeragent-10.0.0.2-import-4-prefix -> accept",
		)},
		{"prefix-length-bounds-on-in-only", v4, state.Policy{Export: []state.Rule{
			rule("accept", "In", "10.0.0.0/8", 16, 24),
			rule("reject", "NotIn", "10.0.0.0/8", 0, 24),
			rule("accept", "Equal", "10.0.0.0/8", 8, 24),
		}}, objects(v4,
			"prefix-set peeragent-10.0.0.2-export-1-prefix 10.0.0.0/8 16..24",
			"prefix-set peeragent-10.0.0.2-export-2-prefix 10.0.0.0/8 8..24",
			"prefix-set peeragent-10.0.0.2-export-3-prefix 10.0.0.0/8 8..8",
			"export peeragent-filters-export",
			"  peeragent-10.0.0.2-export-1: in peeragent-10.0.0.2-export-1-prefix -> accept",
			"  peeragent-10.0.0.2-export-2: not-in peeragent-10.0.0.2-export-2-prefix -> reject",
			"  peeragent-10.0.0.2-export-3: in peeragent-10.0.0.2-export-3-prefix -> accept",
		)},
		{"from-remote-peers-is-external-or-internal", v4, state.Policy{Export: []state.Rule{
			{Filter: "f", Action: "reject", FromRemotePeers: true},
			{Filter: "f", Action: "accept", FromRemotePeers: true, Operator: "In", Prefix: netip.MustParsePrefix("77.0.0.0/16")},
		}}, objects(v4,
			"prefix-set peeragent-10.0.0.2-export-2-prefix 77.0.0.0/16 16..32",
			"export peeragent-filters-export",
			"  peeragent-10.0.0.2-export-1-ebgp: route-type external -> reject",
			"  peeragent-10.0.0.2-export-1-ibgp: route-type internal -> reject",
			"  peeragent-10.0.0.2-export-2-ebgp: in peeragent-10.0.0.2-export-2-prefix route-type external -> accept",
			"  peeragent-10.0.0.2-export-2-ibgp: in peeragent-10.0.0.2-export-2-prefix route-type internal -> accept",
		)},
		{"unconditional-rule", v4, state.Policy{Import: []state.Rule{
			rule("accept", "Equal", "10.1.0.0/16", 0, 0),
			{Filter: "f", Action: "reject"},
		}}, objects(v4,
			"prefix-set peeragent-10.0.0.2-import-1-prefix 10.1.0.0/16 16..16",
			"import peeragent-filters-import",
			"  peeragent-10.0.0.2-import-1: in peeragent-10.0.0.2-import-1-prefix -> accept",
			"  peeragent-10.0.0.2-import-2: -> reject",
		)},
		{"next-hop-self-before-export-rules", v4, state.Policy{NextHop: "self", Export: []state.Rule{
			rule("reject", "In", "172.16.0.0/12", 0, 0),
		}}, objects(v4,
			"prefix-set peeragent-10.0.0.2-export-1-prefix 172.16.0.0/12 12..32",
			"export peeragent-filters-export",
			"  peeragent-10.0.0.2-export-next-hop: next-hop self -> none",
			"  peeragent-10.0.0.2-export-1: in peeragent-10.0.0.2-export-1-prefix -> reject",
		)},
		{"next-hop-keep-alone", v4, state.Policy{NextHop: "keep"}, objects(v4,
			"export peeragent-filters-export",
			"  peeragent-10.0.0.2-export-next-hop: next-hop unchanged -> none",
		)},
		// Calico's export alone: the shared policy covers the neighbor,
		// nothing of its own.
		{"standard-has-no-objects", v4, state.Policy{CalicoExport: true}, nil},
		{"import-rules-bring-own-objects-with-calico-export", v4, state.Policy{CalicoExport: true, Import: []state.Rule{
			{Filter: "f", Action: "reject"},
		}}, append(objects(v4,
			"import peeragent-filters-import",
			"  peeragent-10.0.0.2-import-1: -> reject",
			"export peeragent-filters-export",
		), calicoExport...)},
		// Export rules of its own: Calico's statements follow them in the
		// neighbor's own export policy.
		{"own-export-then-calico", v4, state.Policy{CalicoExport: true, NextHop: "self", Export: []state.Rule{
			rule("accept", "Equal", "10.99.0.0/24", 0, 0),
		}}, append(objects(v4,
			"prefix-set peeragent-10.0.0.2-export-1-prefix 10.99.0.0/24 24..24",
			"export peeragent-filters-export",
			"  peeragent-10.0.0.2-export-next-hop: next-hop self -> none",
			"  peeragent-10.0.0.2-export-1: in peeragent-10.0.0.2-export-1-prefix -> accept",
		), calicoExport...)},
		{"ipv6-neighbor", v6, state.Policy{Import: []state.Rule{
			rule("accept", "In", "fd00:10::/32", 48, 64),
		}}, objects(v6,
			"prefix-set peeragent-fd00::2-import-1-prefix fd00:10::/32 48..64",
			"import peeragent-filters-import",
			"  peeragent-fd00::2-import-1: in peeragent-fd00::2-import-1-prefix -> accept",
		)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := objectsFor(tc.addr, tc.policy)
			if err != nil {
				t.Fatalf("objectsFor: %v", err)
			}
			if d := cmp.Diff(tc.want, render(t, tc.addr, o)); d != "" {
				t.Errorf("objects (-want +got):\n%s", d)
			}
		})
	}
}

// TestSharedRequests: the shared export policy is Calico's statements for
// IPv4 then IPv6 unicast, each for every neighbor not in the custom set,
// after the shared sets it names (the custom set last), assigned to the
// global table's export after the community policy (empty: its statements
// come with the community sets, communities.go) and before the filter
// policies (empty), the import filter policy to its import.
func TestSharedRequests(t *testing.T) {
	r := SharedRequests()
	var sets []string
	for _, s := range r.Sets {
		sets = append(sets, fmt.Sprintf("%s %s %d", s.DefinedSet.DefinedType, s.DefinedSet.Name, len(s.DefinedSet.List)+len(s.DefinedSet.Prefixes)))
	}
	wantSets := []string{
		"DEFINED_TYPE_PREFIX peeragent-own-v4 0", "DEFINED_TYPE_PREFIX peeragent-own-v6 0",
		"DEFINED_TYPE_PREFIX peeragent-nobgp-v4 0", "DEFINED_TYPE_PREFIX peeragent-nobgp-v6 0",
		"DEFINED_TYPE_PREFIX peeragent-pools-v4 0", "DEFINED_TYPE_PREFIX peeragent-pools-v6 0",
		"DEFINED_TYPE_PREFIX peeragent-svc-v4 0", "DEFINED_TYPE_PREFIX peeragent-svc-v6 0",
		"DEFINED_TYPE_PREFIX peeragent-rrsvc-v4 0", "DEFINED_TYPE_PREFIX peeragent-rrsvc-v6 0",
		"DEFINED_TYPE_NEIGHBOR peeragent-custom-neighbors 0",
	}
	if d := cmp.Diff(wantSets, sets); d != "" {
		t.Errorf("sets (-want +got):\n%s", d)
	}
	var stmts []string
	if len(r.Policies) != 4 || r.Policies[0].Policy.Name != communitiesPolicy || len(r.Policies[0].Policy.Statements) != 0 ||
		r.Policies[1].Policy.Name != exportPolicy ||
		r.Policies[2].Policy.Name != filtersImport || len(r.Policies[2].Policy.Statements) != 0 ||
		r.Policies[3].Policy.Name != filtersExport || len(r.Policies[3].Policy.Statements) != 0 {
		t.Fatalf("policies %v, want the empty community policy, the shared export policy, then the empty filter policies", r.Policies)
	}
	for _, st := range r.Policies[1].Policy.Statements {
		c := st.Conditions
		if c.NeighborSet.GetName() != customNeighbors || c.NeighborSet.Type != api.MatchSet_TYPE_INVERT {
			t.Errorf("%s: neighbor condition %v", st.Name, c.NeighborSet)
		}
		fam := "v4"
		if c.AfiSafiIn[0].Afi == api.Family_AFI_IP6 {
			fam = "v6"
		}
		if len(c.AfiSafiIn) != 1 || c.AfiSafiIn[0].Safi != api.Family_SAFI_UNICAST {
			t.Errorf("%s: family condition %v", st.Name, c.AfiSafiIn)
		}
		stmts = append(stmts, fam+" "+statementLine(st))
	}
	var want []string
	for _, f := range []string{"v4", "v6"} {
		p := "peeragent-export-calico-" + f
		want = append(want,
			f+" "+p+"-local: route-type local -> accept",
			f+" "+p+"-own: in peeragent-own-"+f+" -> reject",
			f+" "+p+"-nobgp: in peeragent-nobgp-"+f+" -> reject",
			f+" "+p+"-rrsvc: in peeragent-rrsvc-"+f+" -> accept",
			f+" "+p+"-svc: in peeragent-svc-"+f+" -> accept",
			f+" "+p+"-pools: in peeragent-pools-"+f+" -> accept",
			f+" "+p+"-reject: -> reject")
	}
	if d := cmp.Diff(want, stmts); d != "" {
		t.Errorf("statements (-want +got):\n%s", d)
	}
	var assigned []string
	for _, a := range r.Assignments {
		var names []string
		for _, p := range a.Assignment.Policies {
			names = append(names, p.Name)
		}
		if a.Assignment.Name != globalTable {
			t.Errorf("assignment to %q", a.Assignment.Name)
		}
		assigned = append(assigned, fmt.Sprintf("%s %v", a.Assignment.Direction, names))
	}
	wantAssigned := []string{
		"POLICY_DIRECTION_EXPORT [peeragent-export-communities peeragent-export-calico peeragent-filters-export]",
		"POLICY_DIRECTION_IMPORT [peeragent-filters-import]",
	}
	if d := cmp.Diff(wantAssigned, assigned); d != "" {
		t.Errorf("assignments (-want +got):\n%s", d)
	}
}

func TestObjectsForRefusesWhatItCannotExpress(t *testing.T) {
	a := netip.MustParseAddr("10.0.0.2")
	tests := []struct {
		name   string
		policy state.Policy
		want   string
	}{
		{"unknown-action", state.Policy{Import: []state.Rule{{Action: "maybe"}}}, `import: rule 1: action "maybe" is not accept or reject`},
		{"unknown-operator", state.Policy{Export: []state.Rule{{Action: "accept", Operator: "Near", Prefix: netip.MustParsePrefix("10.0.0.0/8")}}},
			`export: rule 1: match operator "Near" is not Equal, NotEqual, In or NotIn`},
		{"unknown-next-hop", state.Policy{NextHop: "elsewhere"}, `next-hop mode "elsewhere" is not self or keep`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := objectsFor(a, tc.policy)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("want error %q, got %v", tc.want, err)
			}
		})
	}
}

// routeActionName is the action as the tests spell it: accept, reject, or
// none for a statement that only modifies.
func routeActionName(a api.RouteAction) string {
	if a == api.RouteAction_ROUTE_ACTION_UNSPECIFIED {
		return "none"
	}
	return strings.ToLower(strings.TrimPrefix(a.String(), "ROUTE_ACTION_"))
}
