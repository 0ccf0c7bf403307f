package gobgp

import (
	"context"
	"errors"
	"net/netip"

	api "github.com/osrg/gobgp/v4/api"

	"github.com/peeragent/peeragent/state"
)

// installed is what the executor last put in the speaker for a neighbor's
// policy. The embedded speaker has no other writer and loses every policy
// when it (re)starts, so this record is exact; complete is false while an
// install is unfinished or failed, which forces the next SetPolicy to redo it.
type installed struct {
	policy   state.Policy
	complete bool
}

// setPolicy installs a neighbor's policy, replacing what it had. The same
// policy again is no call at all, so re-applying changes nothing.
//
// The order leaves no window in which a configured neighbor has neither
// the shared export policy nor its own Calico statements (GoBGP's default
// would accept everything on export meanwhile):
//  1. it leaves customNeighbors, so that the shared policy covers it;
//  2. its installed objects go and the new ones come;
//  3. if the new policy is excluded from the shared one, it joins the set
//     again, now that its own export policy is there;
//  4. the soft reset re-runs the routes already exchanged.
//
// A neighbor going to a standard policy thus ends at step 2 under the
// shared policy, and one leaving it gets its own policy before it is taken
// out of the shared one's reach. While it is out of the set its own old
// export policy may still be assigned: the shared policy comes first and
// decides every unicast route, so the old one is not reached.
func (e *Executor) setPolicy(ctx context.Context, a netip.Addr, p state.Policy) error {
	if err := e.requireRunning(); err != nil {
		return err
	}
	if cur, ok := e.policies[a]; ok && cur.complete && cur.policy.Equal(p) {
		return nil
	}
	objs, err := objectsFor(a, p)
	if err != nil {
		return err
	}
	// From here until the end the install is unfinished: a failure leaves
	// a record that the next SetPolicy redoes (even of the old policy) and
	// that keeps the neighbor out of the set (syncMember).
	if cur, ok := e.policies[a]; ok {
		e.policies[a] = installed{policy: cur.policy}
	}
	if err := e.leave(ctx, a); err != nil {
		return err
	}
	// With no record, nothing of a's was installed since the speaker
	// started (an install is recorded before it begins), so there is
	// nothing to remove: GoBGP calls saved per new neighbor.
	if _, ok := e.policies[a]; ok {
		if err := e.removePolicy(ctx, a, objs); err != nil {
			return err
		}
	}
	e.policies[a] = installed{policy: p}
	if err := e.addObjects(ctx, objs); err != nil {
		return err
	}
	if excluded(p) {
		if err := e.join(ctx, a); err != nil {
			return err
		}
	}
	e.policies[a] = installed{policy: p, complete: true}
	return e.refresh(ctx, a)
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
	_, configured := e.peers[a]
	if configured {
		if err := e.join(ctx, a); err != nil {
			return err
		}
	}
	if err := e.removePolicy(ctx, a, policyObjects{}); err != nil {
		return err
	}
	delete(e.policies, a)
	if !configured {
		if err := e.leave(ctx, a); err != nil {
			return err
		}
	}
	return e.refresh(ctx, a)
}

// syncMember puts a neighbor about to be configured (or updated) in
// customNeighbors or out of it as its installed policy says: a complete
// install follows excluded; an unfinished one is left to the shared
// policy (its own export policy may be missing). With no policy
// installed, a neighbor whose policy wants no Calico export (a zero one,
// as with no SetPolicy) is a member, so GoBGP's default applies to it as
// before; any other is left to the shared policy until its SetPolicy.
func (e *Executor) syncMember(ctx context.Context, a netip.Addr, p state.Policy) error {
	want := !p.CalicoExport
	if cur, ok := e.policies[a]; ok {
		want = cur.complete && excluded(cur.policy)
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
	if err := e.bgp.AddDefinedSet(ctx, joinRequest(a)); err != nil {
		return err
	}
	e.members[a] = true
	return nil
}

// leave takes a out of customNeighbors; a non-member is no call.
func (e *Executor) leave(ctx context.Context, a netip.Addr) error {
	if !e.members[a] {
		return nil
	}
	err := ignoreAbsent(e.bgp.DeleteDefinedSet(ctx, &api.DeleteDefinedSetRequest{DefinedSet: memberOf(a), All: false}))
	if err != nil {
		return err
	}
	delete(e.members, a)
	return nil
}

// joinRequest adds a to customNeighbors (Replace false: GoBGP appends to
// the set in place, which the shared policy's condition refers to).
func joinRequest(a netip.Addr) *api.AddDefinedSetRequest {
	return &api.AddDefinedSetRequest{DefinedSet: memberOf(a), Replace: false}
}

func memberOf(a netip.Addr) *api.DefinedSet {
	return &api.DefinedSet{DefinedType: api.DefinedType_DEFINED_TYPE_NEIGHBOR, Name: customNeighbors,
		List: []string{hostPrefix(a)}}
}

// removePolicy deletes what was installed for a (by the record) and the
// objects named in also, so that a half-finished install is cleaned up
// too. Assignments go first, then policies (with their statements), then
// the sets they used: GoBGP refuses to delete what is still referenced.
func (e *Executor) removePolicy(ctx context.Context, a netip.Addr, also policyObjects) error {
	all := []policyObjects{also}
	if cur, ok := e.policies[a]; ok {
		old, err := objectsFor(a, cur.policy)
		if err != nil {
			return err
		}
		all = append(all, old)
	}
	var errs []error
	for _, o := range all {
		for _, d := range o.assigned {
			errs = append(errs, ignoreAbsent(e.bgp.DeletePolicyAssignment(ctx,
				&api.DeletePolicyAssignmentRequest{Assignment: assignment(d)})))
			errs = append(errs, ignoreAbsent(e.bgp.DeletePolicy(ctx, &api.DeletePolicyRequest{
				Policy: &api.Policy{Name: d.policy.Name}, All: true,
			})))
		}
	}
	for _, o := range all {
		for _, s := range append(o.prefixes, o.neighbor) {
			if s == nil {
				continue
			}
			errs = append(errs, ignoreAbsent(e.bgp.DeleteDefinedSet(ctx, &api.DeleteDefinedSetRequest{
				DefinedSet: &api.DefinedSet{DefinedType: s.DefinedType, Name: s.Name}, All: true,
			})))
		}
	}
	return errors.Join(errs...)
}

// addObjects creates the sets, then the policies that use them, then
// assigns the policies to the global table (see globalTable for why).
func (e *Executor) addObjects(ctx context.Context, o policyObjects) error {
	for _, s := range append([]*api.DefinedSet{o.neighbor}, o.prefixes...) {
		if s == nil {
			continue
		}
		if err := e.bgp.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: s, Replace: true}); err != nil {
			return err
		}
	}
	for _, d := range o.assigned {
		if err := e.bgp.AddPolicy(ctx, &api.AddPolicyRequest{Policy: d.policy}); err != nil {
			return err
		}
	}
	for _, d := range o.assigned {
		err := e.bgp.AddPolicyAssignment(ctx, &api.AddPolicyAssignmentRequest{Assignment: assignment(d)})
		if err != nil {
			return err
		}
	}
	return nil
}

// refresh makes a configured neighbor see a policy change: GoBGP applies
// policies to routes as they arrive and leave, so the routes already
// exchanged are re-run through them by a soft reset (no session reset).
// A neighbor not configured yet has nothing to refresh (the record of
// configured peers says so without asking the speaker).
func (e *Executor) refresh(ctx context.Context, a netip.Addr) error {
	if _, ok := e.peers[a]; !ok {
		return nil
	}
	return ignoreAbsent(e.bgp.ResetPeer(ctx, &api.ResetPeerRequest{
		Address: a.String(), Soft: true, Direction: api.ResetPeerRequest_DIRECTION_BOTH,
	}))
}
