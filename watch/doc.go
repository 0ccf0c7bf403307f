// Package watch turns what the agent sees into Actions: Kubernetes
// informers for Calico BGPPeers, BGPConfigurations and BGPFilters (either
// API group), core Nodes and per-name Secrets, a directory of
// manifests, and the kernel's TCP-MD5 counters and option-memory limit
// (Kernel). Converters here are the only place Kubernetes and Calico
// types meet the State's own value types.
package watch
