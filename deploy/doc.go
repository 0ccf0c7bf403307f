// Package deploy holds the agent's Kubernetes manifests (the DaemonSet, its
// ServiceAccount and RBAC, an example BGPPeer) and, in crds/, the Calico
// CustomResourceDefinitions the agent reads, for clusters and tests without
// Calico's own. It has no Go code: its test keeps the manifests valid.
package deploy
