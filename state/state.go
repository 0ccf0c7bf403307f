package state

import (
	"net/netip"
	"time"

	"github.com/peeragent/peeragent/state/pmap"
)

// Kind names an input source.
type Kind string

// The sources whose first complete list gates every BGP and VPP effect.
const (
	KindBGPPeer          Kind = "bgppeer"
	KindBGPConfiguration Kind = "bgpconfiguration"
	KindBGPFilter        Kind = "bgpfilter"
	KindNode             Kind = "node"
	KindSecret           Kind = "secret"
	KindBlockAffinity    Kind = "blockaffinity"
	KindIPPool           Kind = "ippool"
	KindPod              Kind = "pod"
)

// SyncedKinds are the sources that must list before anything is applied.
// Secrets are not among them: they are watched by name on demand, and a
// neighbor waiting for one is held back (fail closed) until it arrives.
// BlockAffinities, IPPools and this node's Pods gate too (docs/routes.md
// "Amendment to §1"): no path is withdrawn on a partial view.
var SyncedKinds = []Kind{KindBGPPeer, KindBGPConfiguration, KindBGPFilter, KindNode,
	KindBlockAffinity, KindIPPool, KindPod}

// Options are the agent's own settings that shape derivation.
type Options struct {
	// Namespace holds the password Secrets.
	Namespace string `json:"namespace"`
	// TTLExactHop, when true, uses BIRD's ttlMin of 256-n instead of the
	// default 255-n (one extra hop for the VPP host tap).
	TTLExactHop bool `json:"ttlExactHop,omitempty"`
	// ExtraFamilies are enabled beside unicast, e.g. "ipv4-srpolicy",
	// "l3vpn-ipv6-unicast"; each goes to neighbors of the family it names.
	ExtraFamilies []string `json:"extraFamilies,omitempty"`
	// MaxPaths bounds the next hops of an ECMP route, the lowest addresses
	// kept (docs/routes.md §9.4; --max-paths, default 16).
	MaxPaths int `json:"maxPaths,omitempty"`
	// RouteSettleMax is the longest the sweep of held routes waits after the
	// server start (docs/routes.md §9.6 rule 3; --route-settle-max, 240 s).
	RouteSettleMax Duration `json:"routeSettleMax,omitzero"`
	// RouteRescan is how often, once the routes are settled, the dataplane
	// lists its own routes again to be compared with the table
	// (docs/routes.md §9.7 rule 6; --route-rescan, 30 s; zero: never, and
	// never with --dataplane none).
	RouteRescan Duration `json:"routeRescan,omitzero"`
	// MaxPrefixes is every neighbor's limit of routes learned per address
	// family (docs/routes.md §9.9; --max-prefixes, default 20,000).
	MaxPrefixes uint32 `json:"maxPrefixes,omitempty"`
}

// Server is the embedded speaker's global config; zero before this node
// (with an address) is known.
type Server struct {
	ASN        uint32     `json:"asn"`
	RouterID   netip.Addr `json:"routerID"`
	ListenPort uint16     `json:"listenPort"`
	// ListenAddresses are the node's IPv4 and IPv6 addresses (either may
	// be zero) when the default BGPConfiguration says bindMode NodeIP: the
	// speaker then listens on them only (docs/semantics.md §1). All zero:
	// every address, or those of --bgp-listen-address. An array, so that
	// Server stays comparable.
	ListenAddresses [2]netip.Addr `json:"listenAddresses,omitzero"`
}

// Listen lists the valid ListenAddresses as text, IPv4 first; nil when
// the speaker listens as its flags say.
func (s Server) Listen() []string {
	var out []string
	for _, a := range s.ListenAddresses {
		if a.IsValid() {
			out = append(out, a.String())
		}
	}
	return out
}

// State is everything peeragent knows. Treat it as immutable: the reducer
// returns new States that share structure with this one.
type State struct {
	Node    string  `json:"node"`
	Options Options `json:"options"`
	// Seq counts derivation changes; generations are drawn from it.
	Seq    uint64        `json:"seq"`
	Synced map[Kind]bool `json:"synced"`
	Server Server        `json:"server"`
	// ServerRetry is bumped when the retry of a server that failed to start
	// comes due (ServerRetryAt, by the backoff of ServerAttempts, the
	// failures since it last started): a one-shot request Diff turns into a
	// new StartServer and the re-adding of every neighbor.
	ServerRetry    uint64    `json:"serverRetry,omitempty"`
	ServerAttempts int       `json:"serverAttempts,omitempty"`
	ServerRetryAt  time.Time `json:"serverRetryAt,omitzero"`
	// ServerOtherSpeaker: the server's last failure to start was another
	// BGP speaker holding the port (ServerApplyFailed.OtherSpeaker): not
	// ready, but healthy, as a restart would not free the port.
	ServerOtherSpeaker bool `json:"serverOtherSpeaker,omitempty"`
	// Retries counts the retries that came due (peeragent_retries_total).
	Retries uint64 `json:"retries,omitempty"`
	// MD5Failures is the kernel's TCP-MD5 failure count as last observed
	// (MD5Observed: once observed at all, the baseline, which may be 0);
	// OptmemMax is net.core.optmem_max (0: not known).
	MD5Failures uint64 `json:"md5Failures,omitempty"`
	MD5Observed bool   `json:"md5Observed,omitempty"`
	OptmemMax   int64  `json:"optmemMax,omitempty"`
	// Now is the At of the last Tick: the reducer's clock, the only time
	// it knows besides the times results carry (docs/design.md "Time").
	Now time.Time `json:"now,omitzero"`
	// Routing is the learned side and the dataplane table as a whole
	// (docs/routes.md §9).
	Routing Routing `json:"routing"`
	// PathSeq counts own path changes; path call generations are drawn from
	// it (docs/routes.md §10).
	PathSeq uint64 `json:"pathSeq,omitempty"`
	// ServiceWatchLate: the Service and EndpointSlice watches started after
	// every other source had listed (see AllSynced).
	ServiceWatchLate bool    `json:"serviceWatchLate,omitempty"`
	Inputs           Inputs  `json:"-"`
	Out              Derived `json:"-"`
	Index            Index   `json:"-"`
}

// Inputs are the objects as last seen, keyed by name.
type Inputs struct {
	Peers   *pmap.Map[*PeerEntry]
	Configs *pmap.Map[*BGPConfiguration] // the valid ones (or their last valid version)
	// RejectedConfigs are configurations as last upserted when invalid:
	// the last valid version (if any) stays in Configs.
	RejectedConfigs *pmap.Map[*BGPConfiguration]
	Filters         *pmap.Map[*FilterEntry]
	Nodes           *pmap.Map[*NodeEntry]
	Secrets         *pmap.Map[*Secret]
	InputProblems   *pmap.Map[[]Problem]      // by source (e.g. file/PATH), as reported
	Affinities      *pmap.Map[*AffinityEntry] // this node's, by name
	Pools           *pmap.Map[*PoolEntry]     // by name
	Pods            *pmap.Map[*PodEntry]      // this node's, by NAMESPACE/NAME
	// Learned are the best paths of the running speaker that count (neither
	// withdrawn nor local), by PrefixKey (docs/routes.md §9.1).
	Learned *pmap.Map[*BestPaths]
	// Services and EndpointSlices, by NAMESPACE/NAME, kept only while
	// watched (docs/routes.md §8.4).
	Services       *pmap.Map[*ServiceEntry]
	EndpointSlices *pmap.Map[*EndpointSlice]
}

// RouteFailure is one cause of failed route calls: how many routes have
// it, and the last one that failed of it while it is still failing (zero
// once that one is fine again).
type RouteFailure struct {
	Count int
	Last  netip.Prefix
}

// Derived is what the reducer computes and Diff compares.
type Derived struct {
	Neighbors *pmap.Map[*Neighbor] // by AddrKey
	Sessions  *pmap.Map[*Session]  // by AddrKey
	Problems  *pmap.Map[[]Problem] // by owner (peer/NAME, addr/KEY, ...)
	Watches   *pmap.Map[struct{}]  // secret names to watch
	// Advertised holds the own paths (docs/routes.md §8.1, §8.2), by
	// PrefixKey; Sets the members of the shared per-family prefix sets of
	// the export policy (docs/routes.md §8.3 rule 12), by SetKey.
	Advertised *pmap.Map[*Path]
	Sets       *pmap.Map[SetMember]
	// Routes is the route table, by PrefixKey (docs/routes.md §9.7): own-block
	// drop routes, learned routes, held routes and removals due.
	Routes *pmap.Map[*TableRoute]
	// PathCalls is where the speaker's call of each own path stands, by
	// PrefixKey (docs/routes.md §10): every advertised path, and withdrawals
	// not yet applied.
	PathCalls *pmap.Map[*PathCall]
	// RouteFailures counts the routes whose last call failed (LastError
	// set), by cause: the error with the prefix taken out. Each cause is
	// one problem with its count, not one per route (docs/routes.md §9.7
	// rule 3).
	RouteFailures *pmap.Map[RouteFailure]
	// ServiceWatch: the Service and EndpointSlice watches should run (some
	// service range is configured, docs/routes.md §8.4).
	ServiceWatch bool
}

// AllSynced reports whether every gating source has listed. Services and
// EndpointSlices gate only while watched, and only when the watch was
// started before the gate opened (docs/routes.md "Amendment to §1"): a
// watch started later begins from no services, so its partial view can
// only add paths, and closing the gate again would hold every other effect.
func (s State) AllSynced() bool {
	for _, k := range SyncedKinds {
		if !s.Synced[k] {
			return false
		}
	}
	if s.Out.ServiceWatch && !s.ServiceWatchLate {
		return s.Synced[KindService] && s.Synced[KindEndpointSlice]
	}
	return true
}

// New returns the empty State of the agent on node, before any input.
func New(node string, opts Options) State {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.MaxPaths <= 0 {
		opts.MaxPaths = DefaultMaxPaths
	}
	if opts.MaxPrefixes == 0 {
		opts.MaxPrefixes = DefaultMaxPrefixes
	}
	if opts.RouteSettleMax.Duration <= 0 {
		opts.RouteSettleMax = Duration{DefaultRouteSettleMax}
	}
	return State{
		Node: node, Options: opts, Synced: map[Kind]bool{},
		Inputs: Inputs{
			Peers: pmap.New[*PeerEntry](), Configs: pmap.New[*BGPConfiguration](),
			RejectedConfigs: pmap.New[*BGPConfiguration](),
			Filters:         pmap.New[*FilterEntry](), Nodes: pmap.New[*NodeEntry](),
			Secrets: pmap.New[*Secret](), InputProblems: pmap.New[[]Problem](),
			Affinities: pmap.New[*AffinityEntry](), Pools: pmap.New[*PoolEntry](),
			Pods: pmap.New[*PodEntry](), Learned: pmap.New[*BestPaths](),
			Services: pmap.New[*ServiceEntry](), EndpointSlices: pmap.New[*EndpointSlice](),
		},
		Out: Derived{
			Neighbors: pmap.New[*Neighbor](), Sessions: pmap.New[*Session](),
			Problems: pmap.New[[]Problem](), Watches: pmap.New[struct{}](),
			Advertised: pmap.New[*Path](), Sets: pmap.New[SetMember](),
			Routes: pmap.New[*TableRoute](), PathCalls: pmap.New[*PathCall](),
			RouteFailures: pmap.New[RouteFailure](),
		},
		Index: newIndex(),
	}
}

// DefaultNamespace is where password Secrets live unless told otherwise.
const DefaultNamespace = "calico-vpp-dataplane"
