package gobgp

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	api "github.com/osrg/gobgp/v4/api"

	"github.com/peeragent/peeragent/effects"
	birdtest "github.com/peeragent/peeragent/internal/testrig/bird"
	"github.com/peeragent/peeragent/state"
)

// The policy churn on established sessions: a filter attached, detached,
// re-attached with another CIDR, rewritten while attached, and changed in
// shape. After each step the peer must hold exactly the routes the step
// names and we exactly the ones it lets in, on the same session. The
// expected routes are what the executor's first pattern (every change a
// full removal and re-creation of the neighbor's objects) gave: this test
// passed on it before the in-place pattern (policyops.go) replaced it.

// Our own routes (local: Calico's export statements accept them) and the
// peer's.
var (
	inPlaceOurs   = []string{"10.1.0.0/24", "10.2.0.0/24", "10.3.0.0/24"}
	inPlaceTheirs = []string{"10.50.0.0/24", "10.60.0.0/24"}
)

// inPlaceStep is one policy for the peer and what it lets through: the
// rules as BGPFilter rules (for the agent) and the routes the peer gets
// and we keep.
type inPlaceStep struct {
	name            string
	export, imports []state.FilterRule // nil, nil: no filter
	sent, kept      []string
}

func reject(op, cidr string) state.FilterRule {
	return state.FilterRule{Action: "Reject", MatchOperator: op, CIDR: cidr}
}

func accept(op, cidr string) state.FilterRule {
	return state.FilterRule{Action: "Accept", MatchOperator: op, CIDR: cidr}
}

var inPlaceSteps = []inPlaceStep{
	{name: "standard", sent: inPlaceOurs, kept: inPlaceTheirs},
	{name: "attach", export: []state.FilterRule{reject("In", "10.1.0.0/16")}, imports: []state.FilterRule{reject("In", "10.50.0.0/16")},
		sent: []string{"10.2.0.0/24", "10.3.0.0/24"}, kept: []string{"10.60.0.0/24"}},
	{name: "detach", sent: inPlaceOurs, kept: inPlaceTheirs},
	{name: "re-attach-another-cidr", export: []state.FilterRule{reject("In", "10.2.0.0/16")}, imports: []state.FilterRule{reject("In", "10.60.0.0/16")},
		sent: []string{"10.1.0.0/24", "10.3.0.0/24"}, kept: []string{"10.50.0.0/24"}},
	{name: "rewrite-while-attached", export: []state.FilterRule{reject("In", "10.3.0.0/16")}, imports: []state.FilterRule{reject("Equal", "10.50.0.0/24")},
		sent: []string{"10.1.0.0/24", "10.2.0.0/24"}, kept: []string{"10.60.0.0/24"}},
	{name: "change-shape", export: []state.FilterRule{accept("Equal", "10.3.0.0/24"), reject("In", "10.0.0.0/8")},
		sent: []string{"10.3.0.0/24"}, kept: inPlaceTheirs},
	{name: "same-shape-again", export: []state.FilterRule{accept("Equal", "10.1.0.0/24"), reject("In", "10.0.0.0/8")},
		sent: []string{"10.1.0.0/24"}, kept: inPlaceTheirs},
	{name: "detach-again", sent: inPlaceOurs, kept: inPlaceTheirs},
	{name: "attach-once-more", export: []state.FilterRule{reject("In", "10.2.0.0/16")}, imports: []state.FilterRule{reject("In", "10.50.0.0/16")},
		sent: []string{"10.1.0.0/24", "10.3.0.0/24"}, kept: []string{"10.60.0.0/24"}},
}

// policy is the step's policy as the reducer compiles it for an IPv4
// neighbor: the rules, then Calico's export statements.
func (s inPlaceStep) policy(t *testing.T) state.Policy {
	t.Helper()
	p := state.Policy{CalicoExport: true}
	conv := func(rs []state.FilterRule) []state.Rule {
		var out []state.Rule
		for _, r := range rs {
			pfx := netip.MustParsePrefix(r.CIDR)
			out = append(out, state.Rule{Filter: "f", Action: strings.ToLower(r.Action), Operator: r.MatchOperator, Prefix: pfx})
		}
		return out
	}
	p.Export, p.Import = conv(s.export), conv(s.imports)
	return p
}

func (s inPlaceStep) filter() state.BGPFilter {
	return state.BGPFilter{Name: "f-" + s.name, ExportV4: s.export, ImportV4: s.imports}
}

// TestPairPolicyInPlace: our speaker a, with a's own routes, and an
// embedded GoBGP peer b with its own; each step is a SetPolicy for b on a
// (a DeletePolicy at the end: GoBGP's default, every route out), then the
// neighbor goes and none of its objects may be left behind.
func TestPairPolicyInPlace(t *testing.T) {
	p := newPair(t)
	p.start(t, effects.SetPolicy{Addr: p.na.Address, Policy: state.Policy{CalicoExport: true}, Gen: 1},
		effects.AddPeer{Neighbor: p.na, Gen: 1})
	originate(t, p.a, inPlaceOurs...)
	originate(t, p.b, inPlaceTheirs...)
	ma, mb := p.a.events.mark(), p.b.events.mark()
	for i, s := range inPlaceSteps {
		mustApply(t, p.a.Executor, effects.SetPolicy{Addr: p.na.Address, Policy: s.policy(t), Gen: uint64(2 + i)})
		waitRoutes(t, s.name, "what b receives", func() []string { return without(rib(t, p.b), inPlaceTheirs) }, s.sent)
		waitRoutes(t, s.name, "what a keeps of b's", func() []string { return without(rib(t, p.a), inPlaceOurs) }, s.kept)
		// In place: once made, b's objects stay; the filter set says
		// whether the filter is attached.
		want := []string{"127.0.0.2/32"}
		if s.export == nil && s.imports == nil {
			want = []string{"0.0.0.0/32"}
		}
		if i > 0 && !slices.Equal(filterSet(t, p.a, p.na.Address), want) {
			t.Errorf("step %s: b's filter set %v, want %v", s.name, filterSet(t, p.a, p.na.Address), want)
		}
	}
	mustApply(t, p.a.Executor, effects.DeletePolicy{Addr: p.na.Address, Gen: 20})
	waitRoutes(t, "delete-policy", "what b receives", func() []string { return without(rib(t, p.b), inPlaceTheirs) }, inPlaceOurs)
	waitRoutes(t, "delete-policy", "what a keeps of b's", func() []string { return without(rib(t, p.a), inPlaceOurs) }, inPlaceTheirs)
	mustApply(t, p.a.Executor, effects.SetPolicy{Addr: p.na.Address, Policy: inPlaceSteps[1].policy(t), Gen: 21})
	waitRoutes(t, "attach-after-delete-policy", "what b receives", func() []string { return without(rib(t, p.b), inPlaceTheirs) }, inPlaceSteps[1].sent)
	if evs := p.a.events.since(ma, p.b.addr); len(evs) > 0 {
		t.Errorf("the policy changes touched the session on %s: %s", p.a.addr, p.a.events.describe(p.b.addr))
	}
	if evs := p.b.events.since(mb, p.a.addr); len(evs) > 0 {
		t.Errorf("the policy changes touched the session on %s: %s", p.b.addr, p.b.events.describe(p.a.addr))
	}

	mustApply(t, p.a.Executor, effects.DeletePeer{Addr: p.na.Address, Gen: 22}, effects.DeletePolicy{Addr: p.na.Address, Gen: 22})
	if left := objectsNamed(t, p.a, baseName(p.na.Address)); len(left) > 0 {
		t.Errorf("objects of the deleted neighbor left in the speaker: %v", left)
	}
	if n := members(t, p.a); len(n) != 0 {
		t.Errorf("custom neighbors %v after the neighbor went, want none", n)
	}
}

// TestBirdPolicyInPlace: the same steps through the agent's core against
// BIRD, as BGPFilters attached to and detached from the BGPPeer; BIRD
// announces the peer's routes.
func TestBirdPolicyInPlace(t *testing.T) {
	var announce4 []netip.Prefix
	for _, s := range inPlaceTheirs {
		announce4 = append(announce4, netip.MustParsePrefix(s))
	}
	r := newBirdRigConfig(t, "127.0.0.39", "", false, func(c *birdtest.Config) { c.Announce = announce4 })
	r.waitEstablished(t)
	for _, s := range inPlaceOurs {
		announce(t, r.sp, s)
	}
	before := r.birdChannel(t, "our routes", func(_ birdtest.ProtocolState, c birdtest.ChannelState) bool {
		return c.Imported == len(inPlaceOurs)
	})
	n0 := r.bird.Establishments(birdProto)
	peer := r.inputs(false)[3].(state.SourceSynced).Peers[0]
	for _, s := range inPlaceSteps {
		peer.Filters = nil
		if s.export != nil || s.imports != nil {
			r.ag.dispatch(t, state.FilterUpserted{Filter: s.filter()})
			peer.Filters = []string{s.filter().Name}
		}
		r.ag.dispatch(t, state.PeerUpserted{Peer: peer})
		waitRoutes(t, s.name, "what BIRD receives", func() []string { return birdRoutes(t, r.bird) }, s.sent)
		waitRoutes(t, s.name, "what we keep of BIRD's", func() []string { return without(rib(t, r.sp), inPlaceOurs) }, s.kept)
	}
	after := r.birdChannel(t, "the session", func(p birdtest.ProtocolState, _ birdtest.ChannelState) bool { return p.Established() })
	r.noReset(t, before, n0, after)
}

// waitRoutes polls got until it equals want (sorted), or fails the test.
func waitRoutes(t *testing.T, step, what string, got func() []string, want []string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	var have []string
	if !pollUntil(establishTimeout, func() bool {
		have = slices.Sorted(slices.Values(got()))
		return slices.Equal(have, want)
	}) {
		t.Fatalf("step %s: %s: want %v, have %v", step, what, want, have)
	}
}

// without is routes minus drop.
func without(routes, drop []string) []string {
	return slices.DeleteFunc(slices.Clone(routes), func(r string) bool { return slices.Contains(drop, r) })
}

// birdRoutes are the prefixes BIRD learned from us.
func birdRoutes(t *testing.T, b *birdtest.Bird) []string {
	t.Helper()
	out, err := b.Exec("show", "route", "protocol", birdProto)
	if err != nil {
		t.Fatalf("birdc show route: %v", err)
	}
	var got []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if p, err := netip.ParsePrefix(f[0]); err == nil {
			got = append(got, p.String())
		}
	}
	return got
}

// objectsNamed lists the speaker's defined sets, statements and policies
// whose names start with prefix.
func objectsNamed(t *testing.T, sp *speaker, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, typ := range []api.DefinedType{api.DefinedType_DEFINED_TYPE_PREFIX, api.DefinedType_DEFINED_TYPE_NEIGHBOR} {
		err := sp.Speaker().ListDefinedSet(ctx, &api.ListDefinedSetRequest{DefinedType: typ}, func(d *api.DefinedSet) {
			if strings.HasPrefix(d.Name, prefix) {
				out = append(out, "set "+d.Name)
			}
		})
		if err != nil {
			t.Fatalf("ListDefinedSet: %v", err)
		}
	}
	if err := sp.Speaker().ListPolicy(ctx, &api.ListPolicyRequest{}, func(p *api.Policy) {
		if strings.HasPrefix(p.Name, prefix) {
			out = append(out, "policy "+p.Name)
		}
	}); err != nil {
		t.Fatalf("ListPolicy: %v", err)
	}
	if err := sp.Speaker().ListStatement(ctx, &api.ListStatementRequest{}, func(s *api.Statement) {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, "statement "+s.Name)
		}
	}); err != nil {
		t.Fatalf("ListStatement: %v", err)
	}
	return out
}
