package state

import (
	"net/netip"

	"github.com/peeragent/peeragent/state/pmap"
)

// Matcher is a compiled label selector (implemented by package selector;
// declared here so that State can hold one without importing it).
type Matcher interface {
	Matches(labels map[string]string) bool
	String() string
}

// PeerEntry is a BGPPeer with its parsed parts. Invalid peers keep their
// spec (for the dump) and take part in nothing.
type PeerEntry struct {
	Spec  *BGPPeer
	Valid bool
	// Rejected is the spec last upserted when it was invalid while an
	// earlier version was valid: Spec and the parsed parts are then that
	// last valid version, kept in force (docs/semantics.md §7).
	Rejected *BGPPeer
	NodeSel  Matcher // nil when nodeSelector is empty
	PeerSel  Matcher // nil when peerSelector is empty
	IP       netip.Addr
	Port     uint16 // 0 when peerIP gave none
	ASN      uint32
	LocalASN uint32
	Reach    netip.Addr
	// MaxPrefixes is the annotation AnnotationMaxPrefixes read (0: absent
	// or invalid, the neighbors keep --max-prefixes; docs/routes.md §9.9).
	MaxPrefixes uint32
}

// Global reports whether the peer applies to every node.
func (p *PeerEntry) Global() bool { return p.Spec.Node == "" && p.Spec.NodeSelector == "" }

// NodeEntry is a Node with its parsed annotations.
type NodeEntry struct {
	// Spec is the node as last upserted, except that for this node a
	// malformed annotation is replaced by its last valid text (whose parsed
	// value is kept in force); Rejected is then the node as upserted.
	Spec      *Node
	Rejected  *Node
	V4, V6    netip.Addr // zero when absent or malformed
	ASN       uint32     // 0 when the annotation is absent or malformed
	ClusterID string
}

// Addrs returns the node's addresses, IPv4 first.
func (n *NodeEntry) Addrs() []netip.Addr {
	var out []netip.Addr
	if n.V4.IsValid() {
		out = append(out, n.V4)
	}
	if n.V6.IsValid() {
		out = append(out, n.V6)
	}
	return out
}

// Addr returns the node's address in the family of a (zero if none).
func (n *NodeEntry) Addr(v6 bool) netip.Addr {
	if v6 {
		return n.V6
	}
	return n.V4
}

// FilterEntry is a BGPFilter compiled to rules, or the reason it cannot be.
type FilterEntry struct {
	Spec    *BGPFilter
	Invalid string
	// Rejected is the filter last upserted when it was invalid while Spec,
	// its last valid version, stays applied; RejectedReason says why.
	Rejected       *BGPFilter
	RejectedReason string
	// Deleted: the filter was deleted while neighbors used it; its last
	// version stays applied until the last of them stops naming it.
	Deleted                                bool
	ImportV4, ExportV4, ImportV6, ExportV6 []Rule
}

// Class orders the sources of a candidate neighbor: lower wins.
type Class uint8

// Precedence classes (docs/semantics.md §2.7).
const (
	ClassGlobal Class = iota
	ClassNodeSpecific
	ClassReverse
	ClassMesh
)

// Candidate is one source's wish for a neighbor at Addr. Resolution picks
// the best candidate per address and turns it into a Neighbor.
type Candidate struct {
	Addr   netip.Addr
	Class  Class
	Peer   string // BGPPeer name; "" for the mesh
	Node   string // remote Calico node when the target is one
	Source string // source key that produced it
}

// Index holds the reducer's bookkeeping: which source produced what, and
// who depends on which secret, filter or address. All persistent maps, so
// that an action touches only what depends on it.
type Index struct {
	Cands       *pmap.Map[[]Candidate]         // AddrKey -> candidates, best first
	Sources     *pmap.Map[[]Candidate]         // source key -> its candidates
	NodeByAddr  *pmap.Map[string]              // AddrKey/NODE -> NODE, every node at an address
	SecretUsers *pmap.Map[*pmap.Map[struct{}]] // secret name -> AddrKeys
	FilterUsers *pmap.Map[*pmap.Map[struct{}]] // filter name -> AddrKeys
	SelPeers    *pmap.Map[struct{}]            // peers applying here with a peerSelector
	RevPeers    *pmap.Map[struct{}]            // peers whose peer side selects this node
	// Origins: PrefixKey -> the affinities and pods whose block or address
	// is that prefix (docs/routes.md §8.1); PoolsByCIDR: PrefixKey/NAME of
	// every pool with a readable CIDR -> NAME (the smallest name wins);
	// Communities: the prefixAdvertisements in force (docs/routes.md §8.5).
	Origins     *pmap.Map[*Origins]
	PoolsByCIDR *pmap.Map[string]
	Communities []CommunityRule
	// ServiceRanges are the default configuration's service ranges in
	// force; SlicesByService: NAMESPACE/SERVICE/SLICE -> slice key, every
	// EndpointSlice naming a service (docs/routes.md §8.4).
	ServiceRanges   ServiceRanges
	SlicesByService *pmap.Map[string]
	// Retries: DueKey -> the retry due then (docs/design.md "Time"), every
	// pending one. An entry whose record no longer waits for it is stale:
	// the reducer drops it when it comes first, so the first entry is
	// always a pending retry.
	Retries *pmap.Map[Due]
}

// Origins are the objects that may produce the path of one prefix.
type Origins struct {
	Prefix netip.Prefix
	Blocks []string // affinity names, sorted
	Pods   []string // pod keys, sorted
	// Services are the service keys giving this host path, Ranges the
	// range lists (serviceClusterIPs, ...) holding this CIDR, both sorted
	// (docs/routes.md §8.4).
	Services []string
	Ranges   []string
}

// CommunityRule is one prefixAdvertisement in force: the communities
// (normalised values) of every own path inside Prefix.
type CommunityRule struct {
	Prefix netip.Prefix
	Values []string
}

func newIndex() Index {
	return Index{
		Cands: pmap.New[[]Candidate](), Sources: pmap.New[[]Candidate](),
		NodeByAddr: pmap.New[string](), SecretUsers: pmap.New[*pmap.Map[struct{}]](),
		FilterUsers: pmap.New[*pmap.Map[struct{}]](), SelPeers: pmap.New[struct{}](),
		RevPeers: pmap.New[struct{}](), Origins: pmap.New[*Origins](), PoolsByCIDR: pmap.New[string](),
		SlicesByService: pmap.New[string](), Retries: pmap.New[Due](),
	}
}
