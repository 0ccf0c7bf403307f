// Package watch turns what the agent sees into Actions: Kubernetes
// informers for Calico BGPPeers, BGPConfigurations and BGPFilters (either
// API group), core Nodes and per-name Secrets, and a directory of
// manifests. Converters here are the only place Kubernetes and Calico
// types meet the State's own value types.
package watch
