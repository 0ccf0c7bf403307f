package gobgp

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/peeragent/peeragent/state"
)

// TestPlanPolicyInPlace: the calls of a policy churn on one configured
// neighbor, step by step from a fresh speaker. Only the first filter and a
// change of shape add or remove statements (appended to the filter
// policies; removed with GoBGP's DeletePolicy, which walks every
// neighbor); attaching, detaching and re-attaching with other CIDRs are
// set edits and the soft reset. No call assigns a policy (O(assigned
// policies) in GoBGP).
func TestPlanPolicyInPlace(t *testing.T) {
	a := netip.MustParseAddr("10.0.0.2")
	standard := state.Policy{CalicoExport: true}
	filter := func(cidr string) state.Policy {
		p := standard
		p.Export = []state.Rule{{Filter: "f", Action: "reject", Operator: "In", Prefix: netip.MustParsePrefix(cidr)}}
		return p
	}
	reshaped := filter("10.1.0.0/16")
	reshaped.Export = append(reshaped.Export, state.Rule{Filter: "f", Action: "accept"})
	const calicoStmts = "peeragent-10.0.0.2-export-calico-local peeragent-10.0.0.2-export-calico-own " +
		"peeragent-10.0.0.2-export-calico-nobgp peeragent-10.0.0.2-export-calico-rrsvc peeragent-10.0.0.2-export-calico-svc peeragent-10.0.0.2-export-calico-pools peeragent-10.0.0.2-export-calico-reject"
	const exportStmts = "peeragent-10.0.0.2-export-1 " + calicoStmts
	steps := []struct {
		name   string
		policy state.Policy
		want   []string
	}{
		{"standard", standard, []string{"reset"}},
		{"first-filter", filter("10.1.0.0/16"), []string{
			"add-set peeragent-10.0.0.2-neighbor [10.0.0.2/32]", "add-set peeragent-10.0.0.2-filter [10.0.0.2/32]",
			"add-set peeragent-10.0.0.2-export-1-prefix [10.1.0.0/16]", "add-statements peeragent-filters-export [" + exportStmts + "]",
			"join", "reset"}},
		{"same-again", filter("10.1.0.0/16"), nil},
		{"detach", standard, []string{
			"add-set peeragent-10.0.0.2-filter [0.0.0.0/32]", "del-set peeragent-10.0.0.2-filter [10.0.0.2/32]", "reset"}},
		{"re-attach-another-cidr", filter("10.2.0.0/16"), []string{
			"add-set peeragent-10.0.0.2-export-1-prefix [10.2.0.0/16]", "del-set peeragent-10.0.0.2-export-1-prefix [10.1.0.0/16]",
			"add-set peeragent-10.0.0.2-filter [10.0.0.2/32]", "del-set peeragent-10.0.0.2-filter [0.0.0.0/32]", "reset"}},
		{"rewrite-attached", filter("10.3.0.0/16"), []string{
			"add-set peeragent-10.0.0.2-export-1-prefix [10.3.0.0/16]", "del-set peeragent-10.0.0.2-export-1-prefix [10.2.0.0/16]", "reset"}},
		{"change-shape", reshaped, []string{"leave",
			"del-statements peeragent-filters-export [" + exportStmts + "]",
			"del-statement peeragent-10.0.0.2-export-1", "del-statement peeragent-10.0.0.2-export-calico-local",
			"del-statement peeragent-10.0.0.2-export-calico-own", "del-statement peeragent-10.0.0.2-export-calico-nobgp",
			"del-statement peeragent-10.0.0.2-export-calico-rrsvc", "del-statement peeragent-10.0.0.2-export-calico-svc",
			"del-statement peeragent-10.0.0.2-export-calico-pools", "del-statement peeragent-10.0.0.2-export-calico-reject",
			"del-set-all peeragent-10.0.0.2-neighbor", "del-set-all peeragent-10.0.0.2-filter", "del-set-all peeragent-10.0.0.2-export-1-prefix",
			"add-set peeragent-10.0.0.2-neighbor [10.0.0.2/32]", "add-set peeragent-10.0.0.2-filter [10.0.0.2/32]",
			"add-set peeragent-10.0.0.2-export-1-prefix [10.1.0.0/16]", "add-statements peeragent-filters-export [peeragent-10.0.0.2-export-1 peeragent-10.0.0.2-export-2 " + calicoStmts + "]",
			"join", "reset"}},
		{"detach-reshaped", standard, []string{
			"add-set peeragent-10.0.0.2-filter [0.0.0.0/32]", "del-set peeragent-10.0.0.2-filter [10.0.0.2/32]", "reset"}},
	}
	book := NewPolicyBook()
	for _, s := range steps {
		reqs, err := book.SetPolicy(a, s.policy, true)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		var got []string
		for _, r := range reqs {
			got = append(got, opLine(r.op))
		}
		if d := cmp.Diff(s.want, got); d != "" {
			t.Errorf("%s: calls (-want +got):\n%s", s.name, d)
		}
	}
}

func opLine(o policyOp) string {
	name := map[opKind]string{opAddSet: "add-set", opDelSet: "del-set", opAddPolicy: "add-statements", opDelStatements: "del-statements",
		opDelStatement: "del-statement", opJoin: "join", opLeave: "leave", opReset: "reset"}[o.kind]
	switch {
	case o.kind == opJoin || o.kind == opLeave || o.kind == opReset:
		return name
	case o.set != nil && o.all:
		return "del-set-all " + o.set.Name
	case o.set != nil:
		entries := append([]string(nil), o.set.List...)
		for _, p := range o.set.Prefixes {
			entries = append(entries, p.IpPrefix)
		}
		return name + " " + o.set.Name + " [" + strings.Join(entries, " ") + "]"
	case o.kind == opDelStatement:
		return name + " " + o.policy.Statements[0].Name
	case o.policy != nil:
		var sts []string
		for _, st := range o.policy.Statements {
			sts = append(sts, st.Name)
		}
		return name + " " + o.policy.Name + " [" + strings.Join(sts, " ") + "]"
	}
	return name
}

// TestCallsForIsTheFirstSetPolicy: the requests the benchmarks' floor
// configures a neighbor with are the executor's for a new neighbor: none
// of its own for a standard policy, its objects and membership for one
// with rules; never a request without its set.
func TestCallsForIsTheFirstSetPolicy(t *testing.T) {
	a := netip.MustParseAddr("10.0.0.2")
	n := &state.Neighbor{Address: a, PeerASN: 64513, Families: []string{"ipv4-unicast"}, Policy: state.Policy{CalicoExport: true}}
	c, err := CallsFor(n)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Sets)+len(c.Policies) != 0 || c.Member != nil || c.Peer == nil {
		t.Fatalf("standard policy: %+v, want the peer alone", c)
	}
	n.Policy.Export = []state.Rule{{Filter: "f", Action: "reject", Operator: "In", Prefix: netip.MustParsePrefix("10.1.0.0/16")}}
	if c, err = CallsFor(n); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range c.Sets {
		if s.DefinedSet == nil || s.Replace {
			t.Fatalf("set request %v", s)
		}
		got = append(got, s.DefinedSet.Name)
	}
	want := []string{"peeragent-10.0.0.2-neighbor", "peeragent-10.0.0.2-filter", "peeragent-10.0.0.2-export-1-prefix"}
	if d := cmp.Diff(want, got); d != "" || len(c.Policies) != 1 || c.Policies[0].Policy.Name != filtersExport || c.Member == nil {
		t.Fatalf("filtered: sets (-want +got):\n%s\npolicies %v, member %v", d, c.Policies, c.Member)
	}
}
