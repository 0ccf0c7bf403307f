package state

import (
	"net/netip"
	"time"
)

// Action is a fact the outside world reports. Reduce is the only consumer.
// A dispatched action belongs to the reducer: the State may keep pointers
// into it (its slices and maps), so the dispatcher must not modify it later.
type Action interface {
	// ActionName is the lowerCamel name used in journals and golden files.
	ActionName() string
}

// PeerUpserted: a watcher saw a BGPPeer created or changed.
type PeerUpserted struct {
	Peer BGPPeer `json:"peer"`
}

// PeerDeleted: a watcher saw a BGPPeer go (including tombstones).
type PeerDeleted struct {
	Name string `json:"name"`
}

// ConfigUpserted: a watcher saw a BGPConfiguration created or changed.
type ConfigUpserted struct {
	Config BGPConfiguration `json:"config"`
}

// ConfigDeleted: a watcher saw a BGPConfiguration go.
type ConfigDeleted struct {
	Name string `json:"name"`
}

// FilterUpserted: a watcher saw a BGPFilter created or changed.
type FilterUpserted struct {
	Filter BGPFilter `json:"filter"`
}

// FilterDeleted: a watcher saw a BGPFilter go.
type FilterDeleted struct {
	Name string `json:"name"`
}

// NodeUpserted: a watcher saw a Node created or changed (labels or Calico
// annotations; status-only updates are dropped at the edge).
type NodeUpserted struct {
	Node Node `json:"node"`
}

// NodeDeleted: a watcher saw a Node go.
type NodeDeleted struct {
	Name string `json:"name"`
}

// SecretUpserted: a per-name secret watch saw the Secret (first list or change).
type SecretUpserted struct {
	Secret Secret `json:"secret"`
}

// SecretDeleted: a per-name secret watch saw the Secret go, or found it absent.
type SecretDeleted struct {
	Name string `json:"name"`
}

// SourceSynced: a source delivered a complete list (after start or after a
// relist). It replaces that kind's objects, implying the deletions; only
// the field of its Kind is read.
type SourceSynced struct {
	Kind    Kind               `json:"kind"`
	Peers   []BGPPeer          `json:"peers,omitempty"`
	Configs []BGPConfiguration `json:"configs,omitempty"`
	Filters []BGPFilter        `json:"filters,omitempty"`
	Nodes   []Node             `json:"nodes,omitempty"`
	Secrets []Secret           `json:"secrets,omitempty"`
	// Affinities holds only this node's BlockAffinities.
	Affinities []BlockAffinity `json:"affinities,omitempty"`
	Pools      []IPPool        `json:"pools,omitempty"`
	Pods       []Pod           `json:"pods,omitempty"`
	// Services and EndpointSlices (docs/routes.md §8.4), listed while
	// watched.
	Services       []Service       `json:"services,omitempty"`
	EndpointSlices []EndpointSlice `json:"endpointSlices,omitempty"`
}

// InputProblemsReported: a source (the manifest directory) replaces the
// problems it found in its own input, e.g. an unparsable file.
type InputProblemsReported struct {
	Source   string    `json:"source"`
	Problems []Problem `json:"problems,omitempty"`
}

// PeerApplied: the GoBGP executor applied the effect of generation Gen for
// Address (add, update or delete, with its policy).
type PeerApplied struct {
	Address netip.Addr `json:"address"`
	Gen     uint64     `json:"gen"`
	At      time.Time  `json:"at,omitzero"`
}

// PeerApplyFailed: the GoBGP executor failed the effect of generation Gen.
// Error is already wrapped with the neighbor's identity and holds no secret.
type PeerApplyFailed struct {
	Address netip.Addr `json:"address"`
	Gen     uint64     `json:"gen"`
	Error   string     `json:"error"`
	At      time.Time  `json:"at,omitzero"`
}

// SessionStateChanged: GoBGP's peer watch reported a session state
// (idle, connect, active, opensent, openconfirm, established) at At.
// Graceful, on the report that an Established session ended, says that it
// ended for a graceful-restart cause the neighbor negotiated
// (docs/routes.md §9.5 rule 2): not a reset this node made, not a removal,
// not a prefix limit.
type SessionStateChanged struct {
	Address  netip.Addr    `json:"address"`
	State    string        `json:"state"`
	Reason   string        `json:"reason,omitempty"`
	At       time.Time     `json:"at,omitzero"`
	Graceful *GracefulLoss `json:"graceful,omitempty"`
}

// GracefulLoss is what the ended session's OPEN negotiated for graceful
// restart (RFC 4724): the unicast families whose paths the neighbor asked
// to be kept, the restart time it advertised, and whether it listed any
// family for long-lived graceful restart (RFC 9494), whose paths outlive
// the restart time (docs/routes.md §9.5 rule 2).
type GracefulLoss struct {
	Families       []string `json:"families,omitempty"`
	RestartSeconds uint32   `json:"restartSeconds,omitempty"`
	LongLived      bool     `json:"longLived,omitempty"`
}

func (PeerUpserted) ActionName() string          { return "peerUpserted" }
func (PeerDeleted) ActionName() string           { return "peerDeleted" }
func (ConfigUpserted) ActionName() string        { return "configUpserted" }
func (ConfigDeleted) ActionName() string         { return "configDeleted" }
func (FilterUpserted) ActionName() string        { return "filterUpserted" }
func (FilterDeleted) ActionName() string         { return "filterDeleted" }
func (NodeUpserted) ActionName() string          { return "nodeUpserted" }
func (NodeDeleted) ActionName() string           { return "nodeDeleted" }
func (SecretUpserted) ActionName() string        { return "secretUpserted" }
func (SecretDeleted) ActionName() string         { return "secretDeleted" }
func (SourceSynced) ActionName() string          { return "sourceSynced" }
func (InputProblemsReported) ActionName() string { return "inputProblemsReported" }
func (PeerApplied) ActionName() string           { return "peerApplied" }
func (PeerApplyFailed) ActionName() string       { return "peerApplyFailed" }
func (SessionStateChanged) ActionName() string   { return "sessionStateChanged" }

// ServerApplied: the GoBGP executor started (or restarted) the speaker
// with Server at At: the start of the settling's time limits
// (docs/routes.md §9.6 rule 3).
type ServerApplied struct {
	Server Server    `json:"server"`
	At     time.Time `json:"at,omitzero"`
}

// ServerApplyFailed: the speaker could not be started with Server (for
// example its listen port is taken), seen at At. Error holds no secret.
// OtherSpeaker: the cause is another BGP speaker holding the port
// (calico-node's BIRD, calico-vpp-agent's GoBGP), which no restart of the
// agent frees (docs/semantics.md §6).
type ServerApplyFailed struct {
	Server       Server    `json:"server"`
	OtherSpeaker bool      `json:"otherSpeaker,omitempty"`
	Error        string    `json:"error"`
	At           time.Time `json:"at,omitzero"`
}

func (ServerApplied) ActionName() string     { return "serverApplied" }
func (ServerApplyFailed) ActionName() string { return "serverApplyFailed" }

// PeerKeyRefused: the GoBGP executor saw the speaker refuse the TCP-MD5 key
// of the neighbor at Address, applied under generation Gen (GoBGP only
// logs "failed to set md5 ..." for it, also when the kernel's option memory
// for keys is full, and would otherwise bring the session up without
// authentication). The executor has already taken the neighbor out of the
// speaker; the session becomes failed with Error and is retried with
// backoff (docs/semantics.md §4). Error holds no secret.
type PeerKeyRefused struct {
	Address netip.Addr `json:"address"`
	Gen     uint64     `json:"gen"`
	Error   string     `json:"error"`
	At      time.Time  `json:"at,omitzero"`
}

// MD5FailuresObserved: the kernel's TCP-MD5 failure counters
// (TcpExtTCPMD5Failure + TcpExtTCPMD5NotFound + TcpExtTCPMD5Unexpected of
// /proc/net/netstat, in the speaker's network namespace) read Count at At.
// Dispatched when the total changes. Neighbors with a password whose
// session is not Established when it grows are marked "TCP-MD5 signature
// failures seen" until they reach Established.
type MD5FailuresObserved struct {
	Count uint64    `json:"count"`
	At    time.Time `json:"at,omitzero"`
}

// KernelLimitsObserved: the agent read net.core.optmem_max (bytes) at
// start or when it changed; it bounds the TCP-MD5 keys the listening
// socket can hold, and too many keyed neighbors is a problem before the
// kernel refuses one.
type KernelLimitsObserved struct {
	OptmemMax int64 `json:"optmemMax"`
}

func (PeerKeyRefused) ActionName() string       { return "peerKeyRefused" }
func (MD5FailuresObserved) ActionName() string  { return "md5FailuresObserved" }
func (KernelLimitsObserved) ActionName() string { return "kernelLimitsObserved" }

// BlockAffinityUpserted: a watcher (or the manifest directory) saw a
// BlockAffinity of this node created or changed. The watcher drops other
// nodes' affinities at the edge; one whose node is no longer this node
// arrives as BlockAffinityDeleted (docs/routes.md "Amendment to §1").
type BlockAffinityUpserted struct {
	Affinity BlockAffinity `json:"affinity"`
}

// BlockAffinityDeleted: a BlockAffinity of this node went (or moved to
// another node).
type BlockAffinityDeleted struct {
	Name string `json:"name"`
}

// IPPoolUpserted: a watcher saw an IPPool created or changed.
type IPPoolUpserted struct {
	Pool IPPool `json:"pool"`
}

// IPPoolDeleted: a watcher saw an IPPool go.
type IPPoolDeleted struct {
	Name string `json:"name"`
}

// PodUpserted: the node-scoped pod watch (field selector spec.nodeName=N)
// saw a Pod of this node created or changed.
type PodUpserted struct {
	Pod Pod `json:"pod"`
}

// PodDeleted: a Pod of this node went.
type PodDeleted struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (BlockAffinityUpserted) ActionName() string { return "blockAffinityUpserted" }
func (BlockAffinityDeleted) ActionName() string  { return "blockAffinityDeleted" }
func (IPPoolUpserted) ActionName() string        { return "ipPoolUpserted" }
func (IPPoolDeleted) ActionName() string         { return "ipPoolDeleted" }
func (PodUpserted) ActionName() string           { return "podUpserted" }
func (PodDeleted) ActionName() string            { return "podDeleted" }
