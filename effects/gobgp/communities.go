package gobgp

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/peeragent/peeragent/state"
)

// communitiesPolicy holds the community statements of re-exported routes
// (docs/routes.md §8.3 rule 3): per community value V and family, one
// statement "a route inside the prefix set of V that does not carry V
// gets V", with no route action, so that it never decides. It is assigned
// first on export, before the shared Calico policy and the filter
// policies, and applies to every neighbor: GoBGP cannot run statements of
// another policy in the middle of a neighbor's own run, and one shared
// run costs O(1) calls per change where copies in every neighbor's run
// would cost O(neighbors). The values already on a route are left alone,
// so a value is never added twice (BIRD's bgp_community.add adds a value
// only once; GoBGP's ADD appends whatever the route has).
const communitiesPolicy = "peeragent-export-communities"

// commBook is what the executor made of the community statements on the
// running speaker: the members of each community set (named as the
// reducer names them, state.CommSet), and the sets whose statement
// exists. A statement is made with its set's first member and removed with
// its last; the speaker loses everything when it stops.
type commBook struct {
	members map[string]map[netip.Prefix]bool
	made    map[string]bool
}

func newCommBook() commBook {
	return commBook{members: map[string]map[netip.Prefix]bool{}, made: map[string]bool{}}
}

// added notes a member added to set and makes the set's statement if it
// has none (the prefix set already exists: AddDefinedSet made it). Any
// other set is no call.
func (b commBook) added(ctx context.Context, s *server.BgpServer, set string, p netip.Prefix) error {
	if _, ok := state.CommValue(set); !ok {
		return nil
	}
	if b.members[set] == nil {
		b.members[set] = map[netip.Prefix]bool{}
	}
	b.members[set][p] = true
	if b.made[set] {
		return nil
	}
	has, stmt := commObjects(set)
	if err := s.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: has, Replace: false}); err != nil {
		return fmt.Errorf("community set %s: %w", set, err)
	}
	if err := s.AddPolicy(ctx, &api.AddPolicyRequest{Policy: &api.Policy{Name: communitiesPolicy, Statements: []*api.Statement{stmt}}}); err != nil {
		return fmt.Errorf("community statement %s: %w", set, err)
	}
	b.made[set] = true
	return nil
}

// removed notes a member gone from set; with the last one the set's
// statement, its community set and the (now empty) prefix set go: out of
// the policy, then the statement itself (GoBGP keeps a statement taken out
// of a policy, and would refuse to add one of the same name again), then
// the sets it named.
func (b commBook) removed(ctx context.Context, s *server.BgpServer, set string, p netip.Prefix) error {
	if _, ok := state.CommValue(set); !ok {
		return nil
	}
	delete(b.members[set], p)
	if len(b.members[set]) > 0 || !b.made[set] {
		return nil
	}
	named := &api.Statement{Name: set}
	if err := ignoreAbsent(s.DeletePolicy(ctx, &api.DeletePolicyRequest{
		Policy: &api.Policy{Name: communitiesPolicy, Statements: []*api.Statement{named}}, PreserveStatements: true})); err != nil {
		return fmt.Errorf("community statement %s out of %s: %w", set, communitiesPolicy, err)
	}
	if err := ignoreAbsent(s.DeleteStatement(ctx, &api.DeleteStatementRequest{Statement: named, All: true})); err != nil {
		return fmt.Errorf("community statement %s: %w", set, err)
	}
	b.made[set] = false
	has, _ := commObjects(set)
	for _, d := range []*api.DefinedSet{
		{DefinedType: has.DefinedType, Name: set},
		{DefinedType: api.DefinedType_DEFINED_TYPE_PREFIX, Name: set},
	} {
		if err := ignoreAbsent(s.DeleteDefinedSet(ctx, &api.DeleteDefinedSetRequest{DefinedSet: d, All: true})); err != nil {
			return fmt.Errorf("delete set %s: %w", set, err)
		}
	}
	delete(b.members, set)
	return nil
}

// commObjects are the community set (the set's one value, exactly) and
// the statement of a community set named as state.CommSet and
// state.SetName make it ("peeragent-comm-V-v4" or "-v6"). The prefix
// set, the community set and the statement all bear the set's name
// (GoBGP keeps defined sets per type). A large community ("a:b:c") has a
// large community set and action.
func commObjects(set string) (*api.DefinedSet, *api.Statement) {
	v, _ := state.CommValue(set)
	fam := &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}
	if strings.HasSuffix(set, "-v6") {
		fam.Afi = api.Family_AFI_IP6
	}
	has := &api.DefinedSet{DefinedType: api.DefinedType_DEFINED_TYPE_COMMUNITY, Name: set, List: []string{"^" + v + "$"}}
	c := &api.Conditions{PrefixSet: &api.MatchSet{Type: api.MatchSet_TYPE_ANY, Name: set}, AfiSafiIn: []*api.Family{fam}}
	without := &api.MatchSet{Type: api.MatchSet_TYPE_INVERT, Name: set}
	add := &api.CommunityAction{Type: api.CommunityAction_TYPE_ADD, Communities: []string{v}}
	a := &api.Actions{}
	if strings.Count(v, ":") == 2 {
		has.DefinedType = api.DefinedType_DEFINED_TYPE_LARGE_COMMUNITY
		c.LargeCommunitySet, a.LargeCommunity = without, add
	} else {
		c.CommunitySet, a.Community = without, add
	}
	return has, &api.Statement{Name: set, Conditions: c, Actions: a}
}
