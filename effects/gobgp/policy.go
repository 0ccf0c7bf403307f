package gobgp

import (
	"fmt"
	"net/netip"

	api "github.com/osrg/gobgp/v4/api"

	"github.com/peeragent/peeragent/state"
)

// globalTable names GoBGP's global RIB in policy assignments.
//
// Why global: GoBGP (v3, and v4 still: toPolicyInfo) consults per-peer import/export policies only for
// route-server clients (other peers use the global table, and
// SetPolicyAssignment refuses them). So each neighbor's statements are in
// global policies, every one guarded by a neighbor set holding just that
// neighbor: on import GoBGP matches the neighbor set against the route's
// source, on export against the peer being sent to. A statement that does
// not match leaves the route to the next one, and the global default
// (accept) applies when none decides. The neighbors' statements all go
// into two shared policies (filtersImport, filtersExport), each
// neighbor's as one run: GoBGP evaluates them exactly as one policy per
// neighbor, but adding a neighbor's statements to an assigned policy is
// O(1) where assigning a policy of its own is O(assigned policies).
//
// Calico's export statements are the same for every neighbor that wants
// them alone (they depend on the family only), so they are one shared
// policy, exportPolicy, assigned at every start before any neighbor's:
// its statements match every neighbor NOT in the neighbor set
// customNeighbors. A neighbor whose policy wants something else on export
// (see excluded) is a member of that set and has its own export
// statements, Calico's included. Per-neighbor export policies would cost
// GoBGP one policy per neighbor on every route sent to every peer, and
// every policy call O(policies). GoBGP's neighbor condition is true for an
// empty set (whatever the match type) and honours INVERT otherwise, so the
// shared policy covers every neighbor while the set is empty, and costs
// O(members) per evaluation.
const globalTable = "global"

// The shared objects made at every start (see globalTable). The filter
// policies hold the statements of every neighbor's own objects, each
// neighbor's as one run guarded by its own neighbor sets: a neighbor's
// first filter appends its statements (GoBGP's AddPolicy of an existing
// policy appends, O(1)) instead of assigning policies of its own, which
// GoBGP's AddPolicyAssignment does in O(assigned policies)
// (internal/pkg/table/policy.go:4581-4619).
const (
	customNeighbors = "peeragent-custom-neighbors"
	exportPolicy    = "peeragent-export-calico"
	filtersImport   = "peeragent-filters-import"
	filtersExport   = "peeragent-filters-export"
)

// ownExport says whether p wants more than Calico's export statements:
// export rules of its own or a next-hop mode.
func ownExport(p state.Policy) bool { return len(p.Export) > 0 || p.NextHop != "" }

// needsOwn says whether p needs policy objects of the neighbor's own: rules
// (import or export) or a next-hop mode, the statements a BGPFilter brings.
func needsOwn(p state.Policy) bool { return len(p.Import) > 0 || ownExport(p) }

// excluded says whether a neighbor configured from scratch with policy p
// is left out of the shared export policy (a member of customNeighbors):
// when it has objects of its own (which carry Calico's statements), or
// wants no Calico export at all (a zero policy keeps GoBGP's default,
// accept). A neighbor keeps its objects once made (policyops.go), so the
// executor's record, not p alone, says whether it is a member later.
func excluded(p state.Policy) bool { return !p.CalicoExport || needsOwn(p) }

// policyObjects is everything one neighbor's own policy is made of in
// GoBGP, named after the neighbor's address: its sets, and its statements,
// which go into the shared filter policies (assigned holds them, by
// direction, under the shared policy's name). A
// standard policy (Calico's export alone) and a zero one have none: the
// shared export policy, or GoBGP's default, covers the neighbor.
//
// Two neighbor sets guard the statements: neighbor (always the
// neighbor's address) guards Calico's export statements, filter guards
// the statements of the rules and the next-hop mode. The executor
// switches filter between the neighbor's address and offAddress (no
// neighbor has it) to attach and detach a filter without touching the
// policies (policyops.go).
type policyObjects struct {
	neighbor *api.DefinedSet
	filter   *api.DefinedSet
	prefixes []*api.DefinedSet
	assigned []directedPolicy
}

type directedPolicy struct {
	dir    api.PolicyDirection
	policy *api.Policy
}

// baseName prefixes every object of the neighbor at a.
func baseName(a netip.Addr) string { return "peeragent-" + a.String() }

// objectsFor builds the defined sets and policies for a neighbor's policy.
// Rules become statements in the user's order (GoBGP stops at the first
// statement with an accept or reject). Each statement also matches only
// the neighbor's own unicast family: Calico's v4 and v6 rule lists apply to
// their family, never to VPN or SR-policy routes. With objects of its own,
// the neighbor's export policy ends in Calico's statements (when the
// policy has them), so that it is a member of customNeighbors for as long
// as the objects exist. The filter set comes with the neighbor's address
// (the filter attached).
func objectsFor(a netip.Addr, p state.Policy) (policyObjects, error) {
	var out policyObjects
	if !needsOwn(p) {
		return out, nil
	}
	base := baseName(a)
	b := &policyBuilder{
		neighbor: base + "-neighbor",
		filter:   base + "-filter",
		family:   unicastFamily(a),
	}
	imp, err := b.statements(base+"-import", p.Import)
	if err != nil {
		return out, fmt.Errorf("import: %w", err)
	}
	exp, err := b.statements(base+"-export", p.Export)
	if err != nil {
		return out, fmt.Errorf("export: %w", err)
	}
	if p.NextHop != "" {
		nh, err := b.nextHop(base+"-export-next-hop", p.NextHop)
		if err != nil {
			return out, err
		}
		exp = append([]*api.Statement{nh}, exp...)
	}
	if p.CalicoExport {
		exp = append(exp, b.calicoExport(base+"-export-calico")...)
	}
	out.prefixes = b.prefixes
	for _, d := range []directedPolicy{
		{api.PolicyDirection_POLICY_DIRECTION_IMPORT, &api.Policy{Name: filtersImport, Statements: imp}},
		{api.PolicyDirection_POLICY_DIRECTION_EXPORT, &api.Policy{Name: filtersExport, Statements: exp}},
	} {
		if len(d.policy.Statements) > 0 {
			out.assigned = append(out.assigned, d)
		}
	}
	out.neighbor = neighborSet(b.neighbor, hostPrefix(a))
	out.filter = neighborSet(b.filter, hostPrefix(a))
	return out, nil
}

func neighborSet(name, entry string) *api.DefinedSet {
	return &api.DefinedSet{DefinedType: api.DefinedType_DEFINED_TYPE_NEIGHBOR, Name: name, List: []string{entry}}
}

// offAddress is the filter set's entry while no filter is attached: an
// address no neighbor can have (the unspecified address of the
// neighbor's family). The set is never empty, as GoBGP's neighbor
// condition is true for an empty set (internal/pkg/table/policy.go:2094).
func offAddress(a netip.Addr) string {
	if a.Is4() {
		return hostPrefix(netip.IPv4Unspecified())
	}
	return hostPrefix(netip.IPv6Unspecified())
}

// hostPrefix is a as a neighbor-set entry.
func hostPrefix(a netip.Addr) string { return netip.PrefixFrom(a, a.BitLen()).String() }

type policyBuilder struct {
	neighbor, filter string
	family           *api.Family
	prefixes         []*api.DefinedSet
}

// conditions every statement of a rule or the next-hop mode carries: the
// filter attached to this neighbor, this family.
func (b *policyBuilder) conditions() *api.Conditions { return b.guarded(b.filter) }

// calicoConditions every Calico export statement of the neighbor's own
// carries: this neighbor, this family.
func (b *policyBuilder) calicoConditions() *api.Conditions { return b.guarded(b.neighbor) }

func (b *policyBuilder) guarded(set string) *api.Conditions {
	return &api.Conditions{
		NeighborSet: &api.MatchSet{Type: api.MatchSet_TYPE_ANY, Name: set},
		AfiSafiIn:   []*api.Family{{Afi: b.family.Afi, Safi: b.family.Safi}},
	}
}

func (b *policyBuilder) statements(prefix string, rules []state.Rule) ([]*api.Statement, error) {
	var out []*api.Statement
	for i, r := range rules {
		name := fmt.Sprintf("%s-%d", prefix, i+1)
		st, err := b.rule(name, r)
		if err != nil {
			return nil, fmt.Errorf("rule %d: %w", i+1, err)
		}
		out = append(out, st...)
	}
	return out, nil
}

// rule is one Calico rule as one statement, or two for source:
// RemotePeers. GoBGP has no "learned from any BGP peer" condition; its
// route-type condition tells external (eBGP), internal (iBGP) and local
// routes apart, so "from remote peers" is the pair external + internal,
// i.e. every route this node did not originate (Calico's BIRD template
// tests `source ~ [RTS_BGP]`, the same set).
func (b *policyBuilder) rule(name string, r state.Rule) ([]*api.Statement, error) {
	act, err := routeAction(r.Action)
	if err != nil {
		return nil, err
	}
	cond := func() *api.Conditions { return b.conditions() }
	if r.Prefix.IsValid() {
		set, match, err := prefixSet(name+"-prefix", r)
		if err != nil {
			return nil, err
		}
		b.prefixes = append(b.prefixes, set)
		cond = func() *api.Conditions {
			c := b.conditions()
			c.PrefixSet = &api.MatchSet{Type: match, Name: set.Name}
			return c
		}
	}
	stmt := func(n string, rt api.Conditions_RouteType) *api.Statement {
		c := cond()
		c.RouteType = rt
		return &api.Statement{Name: n, Conditions: c, Actions: &api.Actions{RouteAction: act}}
	}
	if !r.FromRemotePeers {
		return []*api.Statement{stmt(name, api.Conditions_ROUTE_TYPE_UNSPECIFIED)}, nil
	}
	return []*api.Statement{
		stmt(name+"-ebgp", api.Conditions_ROUTE_TYPE_EXTERNAL),
		stmt(name+"-ibgp", api.Conditions_ROUTE_TYPE_INTERNAL),
	}, nil
}

// nextHop rewrites the next hop of every route sent to the neighbor. It
// has no route action, so GoBGP applies it and goes on to the rules.
func (b *policyBuilder) nextHop(name, mode string) (*api.Statement, error) {
	nh := &api.NexthopAction{}
	switch mode {
	case "self":
		nh.Self = true
	case "keep":
		nh.Unchanged = true
	default:
		return nil, fmt.Errorf("next-hop mode %q is not self or keep", mode)
	}
	return &api.Statement{Name: name, Conditions: b.conditions(), Actions: &api.Actions{Nexthop: nh}}, nil
}

func routeAction(a string) (api.RouteAction, error) {
	switch a {
	case "accept":
		return api.RouteAction_ROUTE_ACTION_ACCEPT, nil
	case "reject":
		return api.RouteAction_ROUTE_ACTION_REJECT, nil
	}
	return api.RouteAction_ROUTE_ACTION_UNSPECIFIED, fmt.Errorf("action %q is not accept or reject", a)
}

// prefixSet maps Calico's operators: Equal is the exact prefix, In any
// prefix inside the CIDR with a length within the bounds (by default the
// CIDR's length up to the full length); NotEqual and NotIn are the same
// sets matched inverted. prefixLength bounds apply to In and NotIn: an
// exact prefix has only one length, so Equal and NotEqual ignore them.
func prefixSet(name string, r state.Rule) (*api.DefinedSet, api.MatchSet_Type, error) {
	bits, full := uint32(r.Prefix.Bits()), uint32(r.Prefix.Addr().BitLen())
	lo, hi, match := bits, bits, api.MatchSet_TYPE_ANY
	switch r.Operator {
	case "Equal":
	case "NotEqual":
		match = api.MatchSet_TYPE_INVERT
	case "In", "NotIn":
		hi = full
		if r.MinLen != 0 {
			lo = uint32(r.MinLen)
		}
		if r.MaxLen != 0 {
			hi = uint32(r.MaxLen)
		}
		if r.Operator == "NotIn" {
			match = api.MatchSet_TYPE_INVERT
		}
	default:
		return nil, 0, fmt.Errorf("match operator %q is not Equal, NotEqual, In or NotIn", r.Operator)
	}
	return &api.DefinedSet{
		DefinedType: api.DefinedType_DEFINED_TYPE_PREFIX,
		Name:        name,
		Prefixes:    []*api.Prefix{{IpPrefix: r.Prefix.Masked().String(), MaskLengthMin: lo, MaskLengthMax: hi}},
	}, match, nil
}
