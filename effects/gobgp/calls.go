package gobgp

import (
	api "github.com/osrg/gobgp/v4/api"

	"github.com/peeragent/peeragent/state"
)

// Calls are the GoBGP requests that configure one neighbor on a speaker
// that holds nothing for it: its policy objects (defined sets, policies,
// assignments to the global table), then the peer. They are what the
// executor's AddPeer and SetPolicy amount to, without the idempotency
// checks; benchmarks issue them directly as the floor the agent is
// measured against.
type Calls struct {
	Sets        []*api.AddDefinedSetRequest
	Policies    []*api.AddPolicyRequest
	Assignments []*api.AddPolicyAssignmentRequest
	Peer        *api.AddPeerRequest
}

// CallsFor maps a neighbor as the executor does. The request carries the
// neighbor's password in clear: keep it away from logs.
func CallsFor(n *state.Neighbor) (Calls, error) {
	p, err := peerFor(n)
	if err != nil {
		return Calls{}, err
	}
	c := Calls{Peer: &api.AddPeerRequest{Peer: p}}
	if n.Policy.IsZero() {
		return c, nil
	}
	objs, err := objectsFor(n.Address, n.Policy)
	if err != nil {
		return Calls{}, err
	}
	for _, s := range append([]*api.DefinedSet{objs.neighbor}, objs.prefixes...) {
		c.Sets = append(c.Sets, &api.AddDefinedSetRequest{DefinedSet: s, Replace: true})
	}
	for _, d := range objs.assigned {
		c.Policies = append(c.Policies, &api.AddPolicyRequest{Policy: d.policy})
		c.Assignments = append(c.Assignments, &api.AddPolicyAssignmentRequest{Assignment: assignment(d)})
	}
	return c, nil
}

// assignment puts one of a neighbor's policies on the global table.
func assignment(d directedPolicy) *api.PolicyAssignment {
	return &api.PolicyAssignment{Name: globalTable, Direction: d.dir, Policies: []*api.Policy{{Name: d.policy.Name}}}
}
