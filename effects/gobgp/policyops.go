package gobgp

import (
	"context"
	"net/netip"

	api "github.com/osrg/gobgp/v4/api"
	"google.golang.org/protobuf/proto"

	"github.com/peeragent/peeragent/state"
)

// installed is what the executor last put in the speaker for a neighbor's
// policy. The embedded speaker has no other writer and loses every policy
// when it (re)starts, so this record is exact; complete is false while an
// install is unfinished or failed, which forces the next SetPolicy to
// rebuild (and maybe then lists what such an install may have made).
//
// A neighbor's own objects (own) are made the first time its policy needs
// them and kept, filter detached or not, until its policy is deleted (the
// neighbor goes, or wants no Calico export) or a filter of another shape
// replaces them: attaching, detaching and re-attaching with other CIDRs
// are then a few calls whose cost does not grow with the neighbors or the
// policies (GoBGP v4.8.0's DeletePolicy alone walks every neighbor:
// pkg/server/server.go:4318).
type installed struct {
	policy   state.Policy
	complete bool
	own      *policyObjects // nil: none of its own
	active   bool           // own.filter holds the neighbor's address
	maybe    []policyObjects
}

// member says whether the record puts the neighbor in customNeighbors: a
// complete install with objects of its own (their Calico statements
// replace the shared ones) or with no Calico export (GoBGP's default).
func (r installed) member() bool {
	return r.complete && (r.own != nil || !r.policy.CalicoExport)
}

// setPolicy installs a neighbor's policy. The same policy again is no call
// at all, so re-applying changes nothing. planPolicy says which calls.
func (e *Executor) setPolicy(ctx context.Context, a netip.Addr, p state.Policy) error {
	if err := e.requireRunning(); err != nil {
		return err
	}
	cur, has := e.policies[a]
	if has && cur.complete && cur.policy.Equal(p) {
		return nil
	}
	_, configured := e.peers[a]
	pl, err := planPolicy(a, cur, has, e.members[a], configured, p)
	if err != nil {
		return err
	}
	return e.carryOut(ctx, a, cur, pl)
}

// carryOut makes a plan's calls in order. Until the last one returns the
// install is unfinished: a failure leaves a record that keeps the neighbor
// out of the custom set (syncMember) and lists every object that may
// exist, for the next SetPolicy or DeletePolicy to remove.
func (e *Executor) carryOut(ctx context.Context, a netip.Addr, cur installed, pl plan) error {
	e.policies[a] = unfinished(cur, pl.next)
	for _, o := range pl.ops {
		if err := o.do(ctx, e.bgp); err != nil {
			return err
		}
		e.noteMember(a, o)
	}
	if pl.keep {
		e.policies[a] = pl.next
	} else {
		delete(e.policies, a)
	}
	return nil
}

// unfinished is the record while cur becomes next.
func unfinished(cur, next installed) installed {
	u := installed{policy: cur.policy, own: cur.own, maybe: cur.maybe}
	if next.own != nil && next.own != cur.own {
		u.maybe = append(append([]policyObjects(nil), u.maybe...), *next.own)
	}
	return u
}

func (e *Executor) noteMember(a netip.Addr, o policyOp) {
	switch o.kind {
	case opJoin:
		e.members[a] = true
	case opLeave:
		delete(e.members, a)
	}
}

// deletePolicy removes a neighbor's policy; nothing there is success. A
// neighbor still configured goes back to having no policy, GoBGP's
// default (accept) on export, as before it had one: it joins
// customNeighbors first (its own export policy, if any, decides until it
// goes). One not configured leaves the set after its objects are gone.
func (e *Executor) deletePolicy(ctx context.Context, a netip.Addr) error {
	if e.running == nil {
		return nil // a stopped speaker holds no policy; the next start wipes any
	}
	cur := e.policies[a]
	_, configured := e.peers[a]
	var ops []policyOp
	if configured && !e.members[a] {
		ops = append(ops, joinOp(a))
	}
	ops = append(ops, removalOps(append(ownOf(cur), cur.maybe...))...)
	if !configured && e.members[a] {
		ops = append(ops, leaveOp(a))
	}
	if configured {
		ops = append(ops, resetOp(a))
	}
	return e.carryOut(ctx, a, cur, plan{ops: ops})
}

// syncMember puts a neighbor about to be configured (or updated) in
// customNeighbors or out of it as its installed policy says; an
// unfinished install is left to the shared policy (its own export policy
// may be missing). With no policy installed, a neighbor whose policy wants
// no Calico export (a zero one, as with no SetPolicy) is a member, so
// GoBGP's default applies to it as before; any other is left to the
// shared policy until its SetPolicy.
func (e *Executor) syncMember(ctx context.Context, a netip.Addr, p state.Policy) error {
	want := !p.CalicoExport
	if cur, ok := e.policies[a]; ok {
		want = cur.member()
	}
	if want {
		return e.join(ctx, a)
	}
	return e.leave(ctx, a)
}

// join adds a to customNeighbors; a member already is no call.
func (e *Executor) join(ctx context.Context, a netip.Addr) error {
	if e.members[a] {
		return nil
	}
	return e.runOp(ctx, a, joinOp(a))
}

// leave takes a out of customNeighbors; a non-member is no call.
func (e *Executor) leave(ctx context.Context, a netip.Addr) error {
	if !e.members[a] {
		return nil
	}
	return e.runOp(ctx, a, leaveOp(a))
}

func (e *Executor) runOp(ctx context.Context, a netip.Addr, o policyOp) error {
	if err := o.do(ctx, e.bgp); err != nil {
		return err
	}
	e.noteMember(a, o)
	return nil
}

// joinRequest adds a to customNeighbors (Replace false: GoBGP appends to
// the set in place, which the shared policy's condition refers to).
func joinRequest(a netip.Addr) *api.AddDefinedSetRequest {
	return &api.AddDefinedSetRequest{DefinedSet: memberOf(a), Replace: false}
}

func memberOf(a netip.Addr) *api.DefinedSet {
	return neighborSet(customNeighbors, hostPrefix(a))
}

// plan is the calls that take a neighbor's policy where it is wanted, and
// the record once they all succeeded (keep false: no record).
type plan struct {
	ops  []policyOp
	next installed
	keep bool
}

// planPolicy decides the calls that install p for the neighbor at a,
// given its record cur (has: there is one), whether it is a member of
// customNeighbors now and whether it is configured (then a soft reset
// re-runs the routes already exchanged through the policies: GoBGP applies
// them as routes arrive and leave, not to what it holds). In place, when
// the record is complete and has objects of the neighbor's own:
//   - a policy without rules (the filter detached), with Calico's export
//     as the objects have it: the filter set switches to offAddress;
//   - a policy of the same shape (the same statements, only the prefixes
//     differ): each changed prefix set gets its new prefix appended and
//     its old one removed (Replace true would swap the set object, and
//     statements made earlier keep pointing at the old one:
//     internal/pkg/table/policy.go:4101-4159), then the filter set
//     switches to the neighbor's address.
//
// Otherwise the objects are rebuilt (rebuild).
func planPolicy(a netip.Addr, cur installed, has, member, configured bool, p state.Policy) (plan, error) {
	next, err := objectsFor(a, p)
	if err != nil {
		return plan{}, err
	}
	var ops []policyOp
	inPlace := has && cur.complete && cur.own != nil
	switch {
	case inPlace && !needsOwn(p) && calicoOf(*cur.own) == p.CalicoExport:
		if cur.active {
			ops = guardOps(a, *cur.own, false)
		}
		next = *cur.own
	case inPlace && needsOwn(p) && sameShape(*cur.own, next):
		ops = rewriteOps(*cur.own, next)
		if !cur.active {
			ops = append(ops, guardOps(a, next, true)...)
		}
	default:
		return rebuild(a, cur, has, member, configured, p, next), nil
	}
	if !member {
		ops = append(ops, joinOp(a))
	}
	if configured {
		ops = append(ops, resetOp(a))
	}
	own := next
	return plan{ops: ops, next: installed{policy: p, complete: true, own: &own, active: needsOwn(p)}, keep: true}, nil
}

// rebuild removes whatever the neighbor had and makes what p needs, in an
// order that leaves no window in which a configured neighbor has neither
// the shared export policy nor its own Calico statements (GoBGP's default
// would accept everything on export meanwhile):
//  1. it leaves customNeighbors, so that the shared policy covers it;
//  2. its objects go and the new ones come;
//  3. if the new policy is excluded from the shared one, it joins the set
//     again, now that its own export policy is there;
//  4. the soft reset.
//
// While it is out of the set its old export policy may still be assigned:
// the shared policy comes first and decides every unicast route, so the
// old one is not reached. With no record nothing of the neighbor's was
// installed since the speaker started, so there is nothing to remove.
func rebuild(a netip.Addr, cur installed, has, member, configured bool, p state.Policy, next policyObjects) plan {
	var ops []policyOp
	if member {
		ops = append(ops, leaveOp(a))
	}
	if has {
		ops = append(ops, removalOps(append(ownOf(cur), cur.maybe...))...)
	}
	rec := installed{policy: p, complete: true}
	if needsOwn(p) {
		ops = append(ops, creationOps(next)...)
		rec.own, rec.active = &next, true
	}
	if rec.member() {
		ops = append(ops, joinOp(a))
	}
	if configured {
		ops = append(ops, resetOp(a))
	}
	return plan{ops: ops, next: rec, keep: true}
}

func ownOf(r installed) []policyObjects {
	if r.own == nil {
		return nil
	}
	return []policyObjects{*r.own}
}

// calicoOf says whether objects carry Calico's export statements (the
// neighbor set guards nothing else).
func calicoOf(o policyObjects) bool {
	for _, d := range o.assigned {
		for _, st := range d.policy.Statements {
			if st.GetConditions().GetNeighborSet().GetName() == o.neighbor.GetName() {
				return true
			}
		}
	}
	return false
}

// sameShape says whether two sets of objects differ at most in their
// prefix sets' contents: the same policies with the same statements, and
// the same prefix sets by name.
func sameShape(x, y policyObjects) bool {
	if len(x.assigned) != len(y.assigned) || len(x.prefixes) != len(y.prefixes) {
		return false
	}
	for i := range x.assigned {
		if x.assigned[i].dir != y.assigned[i].dir || !proto.Equal(x.assigned[i].policy, y.assigned[i].policy) {
			return false
		}
	}
	for i := range x.prefixes {
		if x.prefixes[i].Name != y.prefixes[i].Name {
			return false
		}
	}
	return true
}
