package gobgp

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// sharedSets are the per-family prefix sets every neighbor's Calico export
// statements reference (docs/routes.md §8.3 rule 12).
var sharedSets = []string{
	state.SetOwn + "v4", state.SetOwn + "v6", state.SetNoBGP + "v4", state.SetNoBGP + "v6",
	state.SetPools + "v4", state.SetPools + "v6", state.SetSvc + "v4", state.SetSvc + "v6",
	state.SetRRSvc + "v4", state.SetRRSvc + "v6",
}

// Shared are the requests that create, on a started speaker, what every
// neighbor's policy shares: the per-family prefix sets, empty; the custom
// neighbor set, empty; the community policy, empty (the community
// statements of re-exported routes go into it, communities.go); the
// shared export policy (Calico's statements for IPv4 and IPv6 unicast, for
// every neighbor not in that set; see globalTable), the filter policies,
// empty (the neighbors' own statements go into them), and their
// assignment to the global table: export the community policy, the shared
// one, then the filters', import the filters'. The executor makes
// them, in this order, at every start (the benchmarks' bare GoBGP loop
// makes them too).
type Shared struct {
	Sets        []*api.AddDefinedSetRequest
	Policies    []*api.AddPolicyRequest
	Assignments []*api.AddPolicyAssignmentRequest
}

// SharedRequests are the requests of Shared.
func SharedRequests() Shared {
	var out Shared
	for _, name := range sharedSets {
		out.Sets = append(out.Sets, &api.AddDefinedSetRequest{DefinedSet: &api.DefinedSet{
			DefinedType: api.DefinedType_DEFINED_TYPE_PREFIX, Name: name}})
	}
	out.Sets = append(out.Sets, &api.AddDefinedSetRequest{DefinedSet: &api.DefinedSet{
		DefinedType: api.DefinedType_DEFINED_TYPE_NEIGHBOR, Name: customNeighbors}})
	var stmts []*api.Statement
	for _, f := range []*api.Family{
		{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST},
		{Afi: api.Family_AFI_IP6, Safi: api.Family_SAFI_UNICAST},
	} {
		name := exportPolicy + "-v4"
		if f.Afi == api.Family_AFI_IP6 {
			name = exportPolicy + "-v6"
		}
		stmts = append(stmts, calicoStatements(name, f, func() *api.Conditions {
			return &api.Conditions{
				NeighborSet: &api.MatchSet{Type: api.MatchSet_TYPE_INVERT, Name: customNeighbors},
				AfiSafiIn:   []*api.Family{{Afi: f.Afi, Safi: f.Safi}},
			}
		})...)
	}
	out.Policies = []*api.AddPolicyRequest{
		{Policy: &api.Policy{Name: communitiesPolicy}},
		{Policy: &api.Policy{Name: exportPolicy, Statements: stmts}},
		{Policy: &api.Policy{Name: filtersImport}},
		{Policy: &api.Policy{Name: filtersExport}},
	}
	out.Assignments = []*api.AddPolicyAssignmentRequest{
		{Assignment: &api.PolicyAssignment{Name: globalTable, Direction: api.PolicyDirection_POLICY_DIRECTION_EXPORT,
			Policies: []*api.Policy{{Name: communitiesPolicy}, {Name: exportPolicy}, {Name: filtersExport}}}},
		{Assignment: &api.PolicyAssignment{Name: globalTable, Direction: api.PolicyDirection_POLICY_DIRECTION_IMPORT,
			Policies: []*api.Policy{{Name: filtersImport}}}},
	}
	return out
}

// addShared creates the shared objects on a started speaker, before any
// neighbor's statements can name them or go into them; they are never
// deleted while it runs, so deleting a neighbor never fails on "in use".
func addShared(ctx context.Context, s *server.BgpServer) error {
	r := SharedRequests()
	for _, set := range r.Sets {
		if err := s.AddDefinedSet(ctx, set); err != nil {
			return fmt.Errorf("create defined set %s: %w", set.DefinedSet.Name, err)
		}
	}
	for _, p := range r.Policies {
		if err := s.AddPolicy(ctx, p); err != nil {
			return fmt.Errorf("create policy %s: %w", p.Policy.Name, err)
		}
	}
	for _, a := range r.Assignments {
		if err := s.AddPolicyAssignment(ctx, a); err != nil {
			return fmt.Errorf("assign policies %s: %w", a.Assignment.Direction, err)
		}
	}
	return nil
}

// applyPath carries out one path, set or reset-out effect. Each is
// idempotent: AddPath of a prefix replaces its path, deleting what is
// absent and adding a member twice change nothing.
func (e *Executor) applyPath(ctx context.Context, eff effects.Effect, attrs attrCache) error {
	if err := e.requireRunning(); err != nil {
		return err
	}
	switch x := eff.(type) {
	case effects.AddPath:
		p, err := attrs.path(x.Path)
		if err != nil {
			return err
		}
		_, err = e.bgp.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{p}})
		return err
	case effects.DeletePath:
		p, err := withdrawalFor(x.Prefix)
		if err != nil {
			return err
		}
		return e.bgp.DeletePath(apiutil.DeletePathRequest{Paths: []*apiutil.Path{p}})
	case effects.SetAdd:
		if err := e.bgp.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: memberSet(x.Member), Replace: false}); err != nil {
			return err
		}
		return e.comm.added(ctx, e.bgp, x.Member.Set, x.Member.Prefix)
	case effects.SetDel:
		if err := ignoreAbsent(e.bgp.DeleteDefinedSet(ctx, &api.DeleteDefinedSetRequest{DefinedSet: memberSet(x.Member), All: false})); err != nil {
			return err
		}
		return e.comm.removed(ctx, e.bgp, x.Member.Set, x.Member.Prefix)
	case effects.ResetOut:
		if _, ok := e.peers[x.Addr]; !ok {
			return nil // not configured: it will get the whole table when it is
		}
		return ignoreAbsent(e.bgp.ResetPeer(ctx, &api.ResetPeerRequest{
			Address: x.Addr.String(), Soft: true, Direction: api.ResetPeerRequest_DIRECTION_OUT}))
	}
	return fmt.Errorf("not a path effect: %s", eff)
}

func memberSet(m state.SetMember) *api.DefinedSet {
	return &api.DefinedSet{DefinedType: api.DefinedType_DEFINED_TYPE_PREFIX, Name: m.Set,
		Prefixes: []*api.Prefix{{IpPrefix: m.Prefix.String(), MaskLengthMin: uint32(m.Min), MaskLengthMax: uint32(m.Max)}}}
}

// pathFor is an own path as GoBGP originates it (docs/routes.md §8.2):
// ORIGIN IGP, the next hop (IPv4: NEXT_HOP; IPv6: MP_REACH_NLRI with that
// one next hop), standard and large communities; no MED, LOCAL_PREF or
// AS_PATH of ours.
func pathFor(p *state.Path) (*apiutil.Path, error) { return attrCache(nil).path(p) }

// attrCache shares the attributes of IPv4 own paths between the paths of
// one Execute with the same next hop and communities. GoBGP copies a
// request's attribute list and never writes to an attribute it is given
// (pkg/server/server.go apiutil2Path keeps the pointers, and policies
// copy before they change one), and building them was most of what the
// executor added to a bare AddPath loop (BenchmarkOwnPaths). A nil cache
// builds every time. IPv6 paths carry their NLRI in MP_REACH_NLRI, so
// theirs are built each time.
type attrCache map[attrKey][]bgp.PathAttributeInterface

type attrKey struct {
	nextHop     netip.Addr
	communities string
}

func (c attrCache) path(p *state.Path) (*apiutil.Path, error) {
	nlri, err := bgp.NewIPAddrPrefix(p.Prefix)
	if err != nil {
		return nil, fmt.Errorf("nlri %s: %w", p.Prefix, err)
	}
	v4 := p.Prefix.Addr().Is4()
	key := attrKey{p.NextHop, strings.Join(p.Communities, " ")}
	if attrs, ok := c[key]; ok && v4 {
		return &apiutil.Path{Family: bgp.RF_IPv4_UC, Nlri: nlri, Attrs: attrs}, nil
	}
	fam := bgp.RF_IPv4_UC
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(bgp.BGP_ORIGIN_ATTR_TYPE_IGP)}
	if v4 {
		nh, err := bgp.NewPathAttributeNextHop(p.NextHop)
		if err != nil {
			return nil, fmt.Errorf("next hop %s: %w", p.NextHop, err)
		}
		attrs = append(attrs, nh)
	} else {
		fam = bgp.RF_IPv6_UC
		mp, err := bgp.NewPathAttributeMpReachNLRI(fam, []bgp.PathNLRI{{NLRI: nlri}}, p.NextHop)
		if err != nil {
			return nil, fmt.Errorf("next hop %s: %w", p.NextHop, err)
		}
		attrs = append(attrs, mp)
	}
	std, large, err := communities(p.Communities)
	if err != nil {
		return nil, err
	}
	if len(std) > 0 {
		attrs = append(attrs, bgp.NewPathAttributeCommunities(std))
	}
	if len(large) > 0 {
		attrs = append(attrs, bgp.NewPathAttributeLargeCommunities(large))
	}
	if c != nil && v4 {
		c[key] = attrs[:len(attrs):len(attrs)] // an append by anyone copies
	}
	return &apiutil.Path{Family: fam, Nlri: nlri, Attrs: attrs}, nil
}

// withdrawalFor names an own path for DeletePath: GoBGP matches the NLRI.
func withdrawalFor(p netip.Prefix) (*apiutil.Path, error) {
	nh := netip.IPv4Unspecified()
	if p.Addr().Is6() {
		nh = netip.IPv6Unspecified()
	}
	return pathFor(&state.Path{Prefix: p, NextHop: nh})
}

// communities splits normalised "a:b" and "a:b:c" values (docs/routes.md
// §8.5 rule 2) into GoBGP's standard and large communities.
func communities(vals []string) (std []uint32, large []*bgp.LargeCommunity, err error) {
	for _, v := range vals {
		parts := strings.Split(v, ":")
		n := make([]uint32, len(parts))
		for i, s := range parts {
			x, perr := strconv.ParseUint(s, 10, 32)
			if perr != nil {
				return nil, nil, fmt.Errorf("community %q: %w", v, perr)
			}
			n[i] = uint32(x)
		}
		switch {
		case len(n) == 2 && n[0] <= 0xffff && n[1] <= 0xffff:
			std = append(std, n[0]<<16|n[1])
		case len(n) == 3:
			large = append(large, bgp.NewLargeCommunity(n[0], n[1], n[2]))
		default:
			return nil, nil, fmt.Errorf("community %q is not a:b or a:b:c", v)
		}
	}
	return std, large, nil
}

// calicoExport are the statements after a neighbor's own export rules
// (docs/routes.md §8.3 rules 4-10): an own path is accepted; a learned
// route inside an own block or a disableBGPExport pool is rejected, one
// inside the service ranges of a reflector (rule 7), the service ranges
// this node advertises (rule 8) or an export-enabled pool accepted,
// anything else rejected. The communities for re-exported routes (rule 3)
// are added before, by the community policy (communities.go).
func (b *policyBuilder) calicoExport(name string) []*api.Statement {
	return calicoStatements(name, b.family, b.calicoConditions)
}

// calicoStatements are Calico's export statements for family, each with
// the conditions cond makes (which include the family).
func calicoStatements(name string, family *api.Family, cond func() *api.Conditions) []*api.Statement {
	suffix := "v4"
	if family.Afi == api.Family_AFI_IP6 {
		suffix = "v6"
	}
	stmt := func(n string, set string, rt api.Conditions_RouteType, act api.RouteAction) *api.Statement {
		c := cond()
		c.RouteType = rt
		if set != "" {
			c.PrefixSet = &api.MatchSet{Type: api.MatchSet_TYPE_ANY, Name: set + suffix}
		}
		return &api.Statement{Name: name + "-" + n, Conditions: c, Actions: &api.Actions{RouteAction: act}}
	}
	const all = api.Conditions_ROUTE_TYPE_UNSPECIFIED
	return []*api.Statement{
		stmt("local", "", api.Conditions_ROUTE_TYPE_LOCAL, api.RouteAction_ROUTE_ACTION_ACCEPT),
		stmt("own", state.SetOwn, all, api.RouteAction_ROUTE_ACTION_REJECT),
		stmt("nobgp", state.SetNoBGP, all, api.RouteAction_ROUTE_ACTION_REJECT),
		stmt("rrsvc", state.SetRRSvc, all, api.RouteAction_ROUTE_ACTION_ACCEPT),
		stmt("svc", state.SetSvc, all, api.RouteAction_ROUTE_ACTION_ACCEPT),
		stmt("pools", state.SetPools, all, api.RouteAction_ROUTE_ACTION_ACCEPT),
		stmt("reject", "", all, api.RouteAction_ROUTE_ACTION_REJECT),
	}
}

// runPath carries out one path effect in Diff's order (docs/routes.md
// §10). An add-path or delete-path reports its result for its prefix and
// generation, so that a failure is retried; a set or reset-out failure is
// logged only.
// maxAddRun bounds the paths of one AddPath call: the call holds the
// speaker's management loop (and so its sessions' updates) while it adds
// them, about 5 µs a path.
const maxAddRun = 1024

// addRun is how many batches at the start of bs are add-path effects, at
// most maxAddRun.
func addRun(bs []batch) int {
	n := 0
	for n < len(bs) && n < maxAddRun {
		if _, ok := bs[n].path.(effects.AddPath); !ok {
			break
		}
		n++
	}
	return n
}

// runAdds carries out a run of add-path effects in one AddPath call, the
// shortcut of runPath for each: GoBGP takes a list and adds each path in
// one trip through its management loop, instead of a trip a path
// (BenchmarkOwnPaths). A path the executor cannot build fails alone. When
// the call fails GoBGP tells no more than its last error, though it added
// the paths it could; adding a path again changes nothing, so each path of
// the run is then carried out alone, for its own result. The results are
// runPath's (TestBatchedAddPathsEqualOneByOne), appended to out.
func (e *Executor) runAdds(ctx context.Context, run []batch, attrs attrCache, out []state.Action) []state.Action {
	if ctx.Err() != nil || e.requireRunning() != nil {
		for _, b := range run {
			out = append(out, e.runPath(ctx, b.path, attrs))
		}
		return out
	}
	paths := make([]*apiutil.Path, 0, len(run))
	built := make([]bool, len(run))
	for i, b := range run {
		if p, err := attrs.path(b.path.(effects.AddPath).Path); err == nil {
			paths, built[i] = append(paths, p), true
		}
	}
	var err error
	if len(paths) > 0 {
		_, err = e.bgp.AddPath(apiutil.AddPathRequest{Paths: paths})
	}
	now := e.now()
	for i, b := range run {
		if !built[i] || err != nil {
			out = append(out, e.runPath(ctx, b.path, attrs))
			continue
		}
		x := b.path.(effects.AddPath)
		out = append(out, state.PathApplied{Prefix: x.Path.Prefix, Gen: x.Gen, At: now})
	}
	return out
}

func (e *Executor) runPath(ctx context.Context, eff effects.Effect, attrs attrCache) state.Action {
	err := ctx.Err()
	if err == nil {
		err = e.applyPath(ctx, eff, attrs)
	}
	var msg string
	if err != nil {
		msg = e.secrets.scrub(eff.String() + ": " + err.Error())
		e.log.Warn("speaker path effect failed", "effect", eff.String(), "error", msg)
	}
	var p netip.Prefix
	var gen uint64
	switch x := eff.(type) {
	case effects.AddPath:
		p, gen = x.Path.Prefix, x.Gen
	case effects.DeletePath:
		p, gen = x.Prefix, x.Gen
	default:
		return nil
	}
	if err != nil {
		return state.PathApplyFailed{Prefix: p, Gen: gen, Error: msg, At: e.now()}
	}
	return state.PathApplied{Prefix: p, Gen: gen, At: e.now()}
}
