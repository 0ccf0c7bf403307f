package gobgp

import (
	"context"
	"fmt"
	"net/netip"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/server"
	"google.golang.org/protobuf/proto"

	"github.com/peeragent/peeragent/state"
)

// policyOp is one GoBGP request of a policy change, as a value: the
// executor carries it out (do), and the benchmarks' floor replays the
// same ones (Request).
type policyOp struct {
	kind   opKind
	set    *api.DefinedSet
	all    bool        // opDelSet: the whole set, not the listed entries
	policy *api.Policy // opAddPolicy: statements to append; opDelStatements: their names
	addr   netip.Addr  // opReset
}

type opKind int

const (
	opAddSet        opKind = iota // AddDefinedSet, Replace false (appends to an existing set)
	opDelSet                      // DeleteDefinedSet; absent is success
	opAddPolicy                   // AddPolicy of a filter policy: appends the statements
	opDelStatements               // DeletePolicy, not All, statements preserved: out of a filter policy
	opDelStatement                // DeleteStatement, All: the statement itself; absent is success
	opJoin                        // AddDefinedSet of the neighbor to customNeighbors
	opLeave                       // DeleteDefinedSet of the neighbor from customNeighbors
	opReset                       // ResetPeer, soft, both directions; absent is success
)

func (o policyOp) do(ctx context.Context, s *server.BgpServer) error {
	switch o.kind {
	case opAddSet, opJoin:
		return s.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: o.set, Replace: false})
	case opDelSet, opLeave:
		return ignoreAbsent(s.DeleteDefinedSet(ctx, &api.DeleteDefinedSetRequest{DefinedSet: o.set, All: o.all}))
	case opAddPolicy:
		return s.AddPolicy(ctx, &api.AddPolicyRequest{Policy: o.policy})
	case opDelStatements:
		// PreserveStatements: GoBGP would otherwise look up every statement
		// left in the policy in every policy (internal/pkg/table/policy.go:4558-4566).
		return ignoreAbsent(s.DeletePolicy(ctx, &api.DeletePolicyRequest{Policy: o.policy, PreserveStatements: true}))
	case opDelStatement:
		return ignoreAbsent(s.DeleteStatement(ctx, &api.DeleteStatementRequest{Statement: o.policy.Statements[0], All: true}))
	case opReset:
		return ignoreAbsent(s.ResetPeer(ctx, &api.ResetPeerRequest{
			Address: o.addr.String(), Soft: true, Direction: api.ResetPeerRequest_DIRECTION_BOTH,
		}))
	}
	return fmt.Errorf("unknown policy request %d", o.kind)
}

func joinOp(a netip.Addr) policyOp  { return policyOp{kind: opJoin, set: memberOf(a)} }
func leaveOp(a netip.Addr) policyOp { return policyOp{kind: opLeave, set: memberOf(a)} }
func resetOp(a netip.Addr) policyOp { return policyOp{kind: opReset, addr: a} }

// guardOps switch o's filter set to the neighbor's address (on) or to
// offAddress, the new entry first so that the set is never empty.
func guardOps(a netip.Addr, o policyObjects, on bool) []policyOp {
	add, del := offAddress(a), hostPrefix(a)
	if on {
		add, del = del, add
	}
	return []policyOp{
		{kind: opAddSet, set: neighborSet(o.filter.Name, add)},
		{kind: opDelSet, set: neighborSet(o.filter.Name, del)},
	}
}

// rewriteOps change each prefix set of from whose prefix differs in to:
// the new prefix appended, then the old one removed (never an empty set,
// never a new set object).
func rewriteOps(from, to policyObjects) []policyOp {
	var out []policyOp
	for i, s := range to.prefixes {
		old := from.prefixes[i]
		if proto.Equal(old, s) {
			continue
		}
		out = append(out, policyOp{kind: opAddSet, set: s}, policyOp{kind: opDelSet, set: old})
	}
	return out
}

// creationOps make o: the sets, then the statements that use them,
// appended to the filter policies (already assigned to the global table
// at start: see globalTable for why global).
func creationOps(o policyObjects) []policyOp {
	var out []policyOp
	for _, s := range append([]*api.DefinedSet{o.neighbor, o.filter}, o.prefixes...) {
		if s != nil { // none for a policy without objects of its own
			out = append(out, policyOp{kind: opAddSet, set: s})
		}
	}
	for _, d := range o.assigned {
		out = append(out, policyOp{kind: opAddPolicy, policy: d.policy})
	}
	return out
}

// removalOps delete every object of os: the statements are taken out of
// the filter policies and deleted, then the sets they used: GoBGP refuses
// to delete what is still referenced.
func removalOps(os []policyObjects) []policyOp {
	var out []policyOp
	for _, o := range os {
		for _, d := range o.assigned {
			names := &api.Policy{Name: d.policy.Name}
			for _, st := range d.policy.Statements {
				names.Statements = append(names.Statements, &api.Statement{Name: st.Name})
			}
			out = append(out, policyOp{kind: opDelStatements, policy: names})
			for _, st := range names.Statements {
				out = append(out, policyOp{kind: opDelStatement, policy: &api.Policy{Statements: []*api.Statement{st}}})
			}
		}
	}
	for _, o := range os {
		for _, s := range append([]*api.DefinedSet{o.neighbor, o.filter}, o.prefixes...) {
			if s != nil {
				out = append(out, policyOp{kind: opDelSet, all: true,
					set: &api.DefinedSet{DefinedType: s.DefinedType, Name: s.Name}})
			}
		}
	}
	return out
}

// Request is one GoBGP call the executor makes for a policy change.
type Request struct{ op policyOp }

// Do makes the call on s.
func (r Request) Do(ctx context.Context, s *server.BgpServer) error { return r.op.do(ctx, s) }

// PolicyBook is the executor's record of neighbors' policies, apart from
// an executor: it says which calls the executor makes for a policy change
// in the state its earlier changes left, so that the benchmarks' floor
// can issue exactly those calls in a bare loop.
type PolicyBook struct {
	policies map[netip.Addr]installed
	members  map[netip.Addr]bool
}

// NewPolicyBook is the record of a speaker just started.
func NewPolicyBook() *PolicyBook {
	return &PolicyBook{policies: map[netip.Addr]installed{}, members: map[netip.Addr]bool{}}
}

// SetPolicy returns the calls the executor makes for a SetPolicy of p on
// the neighbor at a (configured: already added, so a soft reset follows),
// and records them as done.
func (b *PolicyBook) SetPolicy(a netip.Addr, p state.Policy, configured bool) ([]Request, error) {
	cur, has := b.policies[a]
	if has && cur.complete && cur.policy.Equal(p) {
		return nil, nil
	}
	pl, err := planPolicy(a, cur, has, b.members[a], configured, p)
	if err != nil {
		return nil, err
	}
	out := make([]Request, len(pl.ops))
	for i, o := range pl.ops {
		out[i] = Request{o}
		switch o.kind {
		case opJoin:
			b.members[a] = true
		case opLeave:
			delete(b.members, a)
		}
	}
	b.policies[a] = pl.next
	return out, nil
}
