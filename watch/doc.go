// Package watch turns what the agent sees into Actions. Converters here
// are the only place Kubernetes and Calico types meet the State's own
// value types.
//
// Every kind it watches, and how (state.Kind in brackets):
//
// Kube, the Kubernetes source (cluster mode), one reflector per kind, each
// (re)list one SourceSynced and each event an upsert or a delete:
//   - BGPPeer (bgppeer), BGPConfiguration (bgpconfiguration), BGPFilter
//     (bgpfilter), BlockAffinity (blockaffinity: those whose spec.node is
//     this node's, or empty) and
//     IPPool (ippool): Calico objects through the dynamic client, from one
//     API group (crd.projectcalico.org/v1 or projectcalico.org/v3, resolved
//     by the caller with ResolveGroup);
//   - core v1 Node (node);
//   - core v1 Pod (pod): this node's only, listed and watched with the
//     field selector spec.nodeName (docs/routes.md "Amendment to §1");
//   - core v1 Secret (secret): one watch per referenced name in the
//     agent's namespace (field selector metadata.name), started and stopped
//     by the Watch/Unwatch effects, never a list of all Secrets;
//   - core v1 Service (service) and discovery.k8s.io/v1 EndpointSlice
//     (endpointslice): watched only while some service range is configured
//     (docs/routes.md §8.4), started and stopped by an effect.
//
// The built-in kinds are read through a Client: TypedClient, the
// agent's, is client-go's generic typed client over a scheme of core/v1
// and discovery/v1 only, not the full clientset (which links and
// registers every API group); tests adapt the fake clientset to Client.
//
// These are the seven state.SyncedKinds plus secret, service and
// endpointslice. Dir, the manifest-directory source (--from), reads the
// same ten kinds from the files of one directory (Secrets of the agent's
// namespace, Pods of its node), polling, and dispatches a SourceSynced for
// each kind that changed (all ten on the first listing).
//
// Kernel is the source of the kernel facts (docs/semantics.md §4): the
// TCP-MD5 failure counters of /proc/net/netstat (MD5FailuresObserved) and
// net.core.optmem_max (KernelLimitsObserved), polled.
//
// watch/status is output, not input: it writes CalicoNodeStatus statuses
// and Events from published States (its own doc).
package watch
