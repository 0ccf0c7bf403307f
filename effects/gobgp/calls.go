package gobgp

import (
	api "github.com/osrg/gobgp/v4/api"

	"github.com/peeragent/peeragent/state"
)

// Calls are the GoBGP requests that configure one neighbor on a speaker
// that holds nothing for it (but the Shared objects): its own policy
// objects (defined sets, policies, assignments to the global table), its
// membership of the custom neighbor set if its policy is excluded from the
// shared export policy, then the peer. A neighbor with a standard policy
// has only the peer. They are what the executor's SetPolicy and AddPeer
// amount to, without the idempotency checks; benchmarks issue them
// directly as the floor the agent is measured against.
type Calls struct {
	Sets     []*api.AddDefinedSetRequest
	Policies []*api.AddPolicyRequest   // statements appended to the filter policies
	Member   *api.AddDefinedSetRequest // nil: under the shared export policy
	Peer     *api.AddPeerRequest
}

// CallsFor maps a neighbor as the executor does. The request carries the
// neighbor's password in clear: keep it away from logs.
func CallsFor(n *state.Neighbor) (Calls, error) {
	p, err := peerFor(n)
	if err != nil {
		return Calls{}, err
	}
	c := Calls{Peer: &api.AddPeerRequest{Peer: p}}
	if excluded(n.Policy) {
		c.Member = joinRequest(n.Address)
	}
	objs, err := objectsFor(n.Address, n.Policy)
	if err != nil {
		return Calls{}, err
	}
	for _, o := range creationOps(objs) {
		switch o.kind {
		case opAddSet:
			c.Sets = append(c.Sets, &api.AddDefinedSetRequest{DefinedSet: o.set})
		case opAddPolicy:
			c.Policies = append(c.Policies, &api.AddPolicyRequest{Policy: o.policy})
		}
	}
	return c, nil
}
