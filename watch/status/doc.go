// Package status reports the agent's published State back to the cluster:
// this node's CalicoNodeStatus objects get the BGP agent, session and
// route part of their status (the Routes class as calico-node fills it
// from BIRD, bounded by MaxStatusRoutes per family), and a BGPPeer, BGPFilter or Secret named by a problem
// (docs/semantics.md §7) gets a Warning Event when the problem appears and
// a Normal one when it clears.
//
// It is output, not input, yet it lives under watch/ because watch/ is
// where client-go and projectcalico/api may be imported (docs/design.md,
// "Packages"): agent/ and the pure core must not. It reads nothing but
// published States (Reporter.Observe, an agent.LoopConfig Published
// observer, which never blocks: it keeps the latest State for the
// reporter's own goroutine) and the CalicoNodeStatus objects themselves,
// which users create (spec.node names the node); it never creates one.
//
// Contract: a status is written only when what it would hold changed
// (lastUpdated aside), through the configured Calico API group; Events
// are deduplicated by (object, problem) and each object gets at most one
// batch of Events per MinInterval (a change within it is sent, net, when
// the interval ends). Problems never hold a secret value, so neither do
// Events nor statuses.
package status
