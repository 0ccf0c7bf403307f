package reducer

import (
	"hash/fnv"
	"net/netip"
	"time"

	"github.com/peeragent/peeragent/state"
)

// Defaults from Calico.
const (
	defaultASN         = 64512
	defaultPort        = 179
	defaultRestartTime = 120 * time.Second
)

func (t *tx) local() *state.NodeEntry {
	n, _ := t.s.Inputs.Nodes.Get(t.s.Node)
	return n
}

func (t *tx) defaults() *state.BGPConfiguration {
	c, ok := t.s.Inputs.Configs.Get("default")
	if !ok {
		return &state.BGPConfiguration{}
	}
	return c
}

// defaultPending reports whether the default BGPConfiguration is invalid
// with no last valid version (on a fresh start, or created invalid): what
// depends on it is held back until it is valid, rather than run with
// Calico's defaults (AS 64512) instead of what the operator wrote
// (docs/semantics.md §7). It depends on the objects alone, so a restart
// of the agent changes nothing.
func (t *tx) defaultPending() bool {
	if _, ok := t.s.Inputs.Configs.Get("default"); ok {
		return false
	}
	_, rejected := t.s.Inputs.RejectedConfigs.Get("default")
	return rejected
}

// readsDefault reports whether node n's AS or listen port would come from
// the default BGPConfiguration.
func (t *tx) readsDefault(n *state.NodeEntry) bool {
	if n == nil {
		return false
	}
	if n.ASN == 0 {
		return true
	}
	c, ok := t.s.Inputs.Configs.Get("node." + n.Spec.Name)
	return !ok || c.ListenPort < 1 || c.ListenPort > 65535
}

// asnOf is a node's effective AS: its annotation, else the default
// configuration's, else 64512.
func (t *tx) asnOf(n *state.NodeEntry) uint32 {
	if n != nil && n.ASN != 0 {
		return n.ASN
	}
	if d := t.defaults(); d.ASNumber >= 1 && d.ASNumber <= 4294967295 {
		return uint32(d.ASNumber)
	}
	return defaultASN
}

// portOf is a node's BGP listen port: node.<name>, else default, else 179.
func (t *tx) portOf(node string) uint16 {
	for _, name := range []string{"node." + node, "default"} {
		if c, ok := t.s.Inputs.Configs.Get(name); ok && c.ListenPort >= 1 && c.ListenPort <= 65535 {
			return uint16(c.ListenPort)
		}
	}
	return defaultPort
}

func (t *tx) meshEnabled() bool {
	d := t.defaults()
	return d.NodeToNodeMeshEnabled == nil || *d.NodeToNodeMeshEnabled
}

func isLocalAddr(l *state.NodeEntry, a netip.Addr) bool {
	return l != nil && (a == l.V4 || a == l.V6)
}

// server computes the speaker's global config; zero until this node is
// known with at least one address, and while its AS or port would come from
// a default BGPConfiguration that was never valid.
func (t *tx) server() state.Server {
	l := t.local()
	if l == nil || (!l.V4.IsValid() && !l.V6.IsValid()) || (t.defaultPending() && t.readsDefault(l)) {
		return state.Server{}
	}
	id := l.V4
	if !id.IsValid() {
		id = routerIDFromName(t.s.Node)
	}
	srv := state.Server{ASN: t.asnOf(l), RouterID: id, ListenPort: t.portOf(t.s.Node)}
	if t.defaults().BindMode == "NodeIP" { // docs/semantics.md §1, as confd's "listen bgp address"
		srv.ListenAddresses = [2]netip.Addr{l.V4, l.V6}
	}
	return srv
}

// routerIDFromName gives an IPv6-only node a stable IPv4 router ID: a hash
// of its name, kept out of 0.0.0.0/8, multicast and reserved space.
func routerIDFromName(name string) netip.Addr {
	h := fnv.New32a()
	h.Write([]byte(name))
	v := h.Sum32()
	b := [4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
	b[0] = 1 + b[0]%223 // 1..223: never 0.x, multicast or reserved
	if b[3] == 0 {
		b[3] = 1
	}
	return netip.AddrFrom4(b)
}
