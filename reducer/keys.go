package reducer

// Keys of the State's internal maps and the names problems are filed
// under, each built in one place: prefix scans (sourceKeys) and the
// problem objects users read (docs/semantics.md §7) depend on their shape.

// Source keys (Index.Sources, Candidate.Source): which rule of which object
// produced a candidate. All of a BGPPeer's keys start with peerSources.
func meshSource(node string) string          { return "m/" + node }
func peerSources(peer string) string         { return "p/" + peer + "/" }
func forwardSource(peer, node string) string { return peerSources(peer) + "f/" + node }
func reverseSource(peer, node string) string { return peerSources(peer) + "r/" + node }
func peerIPSource(peer string) string        { return peerSources(peer) + "ip" }

// Problem buckets (Out.Problems keys): a step replaces one bucket's
// problems at a time. A source's bucket is its source key under srcBucket.
const srcBucket = "src/"

func addrBucket(addrKey string) string  { return "addr/" + addrKey }
func peerBucket(name string) string     { return "peer/" + name }
func nodeBucket(name string) string     { return "node/" + name }
func configBucket(name string) string   { return "config/" + name }
func sourceBucket(source string) string { return srcBucket + source }

// Problem objects, as users read them: kind/name in lower case.
func bgpPeerObject(name string) string { return "bgppeer/" + name }
func nodeObject(name string) string    { return "node/" + name }
func configObject(name string) string  { return "bgpconfiguration/" + name }

// nodeAddrKey is the key of Index.NodeByAddr: an address key, then the
// node holding the address (two nodes may claim one address).
func nodeAddrKey(addrKey, node string) string { return addrKey + "/" + node }

// Buckets and objects of the advertising inputs (docs/routes.md "Amendment
// to §1"): a path's bucket holds the problems of deriving it.
func affinityBucket(name string) string { return "affinity/" + name }
func poolBucket(name string) string     { return "pool/" + name }
func podBucket(key string) string       { return "pod/" + key }
func pathBucket(prefixKey string) string {
	return "path/" + prefixKey
}
func affinityObject(name string) string { return "blockaffinity/" + name }
func poolObject(name string) string     { return "ippool/" + name }
func podObject(key string) string       { return "pod/" + key }
