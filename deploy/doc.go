// Package deploy holds the agent's Kubernetes manifests: base/ (the
// DaemonSet, its ServiceAccount and RBAC), the kustomizations that apply it
// (deploy/ itself for Calico/VPP, calico/ for plain Calico, monitoring/ for
// a PodMonitor), an example BGPPeer and, in crds/, the Calico
// CustomResourceDefinitions the agent reads, for clusters and tests without
// Calico's own. It has no Go code: its tests keep the manifests valid,
// render every kustomization with kustomize's library and apply each to a
// real kube-apiserver.
package deploy
