package clustergen

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// Config describes a synthetic cluster.
type Config struct {
	Seed  uint64
	Nodes int // cluster nodes; the first (node-00000) is the local one
	Peers int // external BGPPeers, each its own neighbor of the local node
	// Fractions of Peers (0 to 1): global ones (every node) and ones that
	// select the local node by label; the rest name it in spec.node.
	Global, Selected float64
	// Fractions of Peers with a password Secret of their own, and with one
	// of the Filters BGPFilters.
	Password, Filtered float64
	Filters            int
	// DualStack gives every node an IPv6 address too (two mesh neighbors
	// per remote node).
	DualStack bool
	// ListenPort is the default BGPConfiguration's listenPort (0: 179).
	ListenPort int32
	// Reflector adds the BGPPeer "rr-targets": the local node peers with
	// every node labelled route-reflector=true, with its own restart time,
	// instead of through the mesh. Node churn toggles that label.
	Reflector bool
}

// Cluster is a generated cluster: complete object lists, sorted by name.
type Cluster struct {
	Local   string
	Nodes   []state.Node
	Configs []state.BGPConfiguration
	Filters []state.BGPFilter
	Secrets []state.Secret
	Peers   []state.BGPPeer
	// PasswordPeers[i] is the index in Peers of the peer using Secrets[i].
	PasswordPeers []int
	// Only restricts Churn to these kinds (every kind the cluster can make
	// when empty), to measure in-place and resetting changes apart.
	Only  []string
	index map[string]int // kind/name -> position in its list
	// filtered[i]: Peers[i] was generated with a BGPFilter (peer churn
	// flips relative to it).
	filtered []bool
}

// LocalASN is the cluster's AS (the default BGPConfiguration's).
const LocalASN = 64512

// ReflectorLabel is the node label the "rr-targets" BGPPeer selects.
const ReflectorLabel = "route-reflector"

// Generate builds the cluster cfg describes.
func Generate(cfg Config) *Cluster {
	r := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	c := &Cluster{Local: NodeName(0)}
	c.Nodes = genNodes(r, cfg)
	c.Configs = genConfigs(cfg)
	c.Filters = genFilters(r, cfg.Filters)
	c.genPeers(r, cfg)
	for _, p := range c.Peers {
		c.filtered = append(c.filtered, len(p.Filters) > 0)
	}
	c.reindex()
	return c
}

// NodeName is the name of the i-th node.
func NodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// NodeAddr is the i-th node's IPv4 address (10.0.0.1 for the first).
func NodeAddr(i int) netip.Addr { return addrFrom(10<<24 + uint32(i) + 1) }

// PeerAddr is the i-th BGPPeer's peerIP (172.16.0.1 for the first).
func PeerAddr(i int) netip.Addr { return addrFrom(172<<24 + 16<<16 + uint32(i) + 1) }

func addrFrom(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func nodeAddr6(i int) netip.Addr {
	var b [16]byte
	b[0], b[1] = 0xfd, 0x00
	b[12], b[13], b[14], b[15] = byte((i+1)>>24), byte((i+1)>>16), byte((i+1)>>8), byte(i+1)
	return netip.AddrFrom16(b)
}

func genNodes(r *rand.Rand, cfg Config) []state.Node {
	out := make([]state.Node, cfg.Nodes)
	for i := range out {
		n := state.Node{Name: NodeName(i), IPv4Address: NodeAddr(i).String() + "/8",
			Labels: map[string]string{"rack": fmt.Sprintf("r%d", r.IntN(8)), ReflectorLabel: "false"}}
		if i == 0 {
			n.Labels["bgp-edge"] = "true"
		}
		if cfg.DualStack {
			n.IPv6Address = nodeAddr6(i).String() + "/64"
		}
		out[i] = n
	}
	return out
}

func genConfigs(cfg Config) []state.BGPConfiguration {
	mesh := true
	return []state.BGPConfiguration{{Name: "default", ASNumber: LocalASN,
		NodeToNodeMeshEnabled: &mesh, ListenPort: cfg.ListenPort}}
}

// genFilters makes n filters, each exporting one random /16 of 10.0.0.0/8
// and rejecting the rest, and importing only routes from remote peers.
func genFilters(r *rand.Rand, n int) []state.BGPFilter {
	out := make([]state.BGPFilter, n)
	for i := range out {
		cidr := fmt.Sprintf("10.%d.0.0/16", r.IntN(256))
		out[i] = state.BGPFilter{Name: fmt.Sprintf("filter-%03d", i),
			ExportV4: []state.FilterRule{{Action: "Accept", MatchOperator: "In", CIDR: cidr}, {Action: "Reject"}},
			ImportV4: []state.FilterRule{{Action: "Accept", Source: "RemotePeers"}}}
	}
	return out
}

func (c *Cluster) genPeers(r *rand.Rand, cfg Config) {
	for i := 0; i < cfg.Peers; i++ {
		p := state.BGPPeer{Name: fmt.Sprintf("peer-%06d", i), PeerIP: PeerAddr(i).String(),
			ASNumber: 65000 + int64(r.IntN(1000))}
		switch x := r.Float64(); {
		case x < cfg.Global:
		case x < cfg.Global+cfg.Selected:
			p.NodeSelector = "bgp-edge == 'true'"
		default:
			p.Node = c.Local
		}
		if r.Float64() < cfg.Password {
			p.Password = &state.SecretKeyRef{Name: "bgp-" + p.Name, Key: "password"}
			c.Secrets = append(c.Secrets, state.Secret{Name: p.Password.Name,
				Data: map[string]state.Password{"password": state.NewPassword(secretText(r))}})
			c.PasswordPeers = append(c.PasswordPeers, i)
		}
		if cfg.Filters > 0 && r.Float64() < cfg.Filtered {
			p.Filters = []string{c.Filters[r.IntN(cfg.Filters)].Name}
		}
		c.Peers = append(c.Peers, p)
	}
	if cfg.Reflector {
		c.Peers = append(c.Peers, state.BGPPeer{Name: "rr-targets", Node: c.Local,
			PeerSelector: ReflectorLabel + " == 'true'", MaxRestartTime: &state.Duration{Duration: 300 * time.Second}})
	}
}

func secretText(r *rand.Rand) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 16)
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return string(b)
}

func (c *Cluster) reindex() {
	c.index = map[string]int{}
	for i, n := range c.Nodes {
		c.index["node/"+n.Name] = i
	}
	for i, p := range c.Peers {
		c.index["peer/"+p.Name] = i
	}
	for i, s := range c.Secrets {
		c.index["secret/"+s.Name] = i
	}
}

// Objects is the cluster as reducer.FromScratch takes it.
func (c *Cluster) Objects() reducer.Objects {
	return reducer.Objects{Peers: c.Peers, Configs: c.Configs, Filters: c.Filters, Nodes: c.Nodes, Secrets: c.Secrets}
}

// Actions are one SourceSynced per kind, in the order of the file source:
// nodes, configurations, filters, secrets, peers, then the (empty)
// advertising kinds.
func (c *Cluster) Actions() []state.Action {
	return []state.Action{
		state.SourceSynced{Kind: state.KindNode, Nodes: c.Nodes},
		state.SourceSynced{Kind: state.KindBGPConfiguration, Configs: c.Configs},
		state.SourceSynced{Kind: state.KindBGPFilter, Filters: c.Filters},
		state.SourceSynced{Kind: state.KindSecret, Secrets: c.Secrets},
		state.SourceSynced{Kind: state.KindBGPPeer, Peers: c.Peers},
		state.SourceSynced{Kind: state.KindIPPool}, state.SourceSynced{Kind: state.KindBlockAffinity},
		state.SourceSynced{Kind: state.KindPod},
	}
}
