// Package clustergen generates synthetic Calico clusters for benchmarks:
// N nodes in the node-to-node mesh and M external BGPPeers (global and
// node-specific, some with a password Secret or a BGPFilter), all as seen
// by the agent on the first node.
//
// Contract:
//   - Deterministic: the same Config (seed included) gives the same
//     cluster, byte for byte, and the same churn.
//   - Every generated BGPPeer applies to the local node and has its own
//     peerIP, so M peers are M neighbors there, beside the N-1 of the mesh;
//     the optional route-reflector peer selects nodes by a label that no
//     node carries until churn sets it.
//   - A cluster is fed either as state Actions (one SourceSynced per kind,
//     the order watch.Objects.Actions uses) or as a manifest directory that
//     the watch file source reads into the same objects.
//   - Churn yields single-object changes (a peer update, a secret rotation,
//     a remote node's label) that each change exactly one neighbor; the
//     Actions it returns are new values, never shared with earlier ones.
package clustergen
