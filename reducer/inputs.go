package reducer

import (
	"fmt"
	"maps"
	"reflect"
	"strings"

	"github.com/peeragent/peeragent/state"
)

func (t *tx) upsertPeer(p *state.BGPPeer) {
	in := &t.s.Inputs
	old, had := in.Peers.Get(p.Name)
	if had && reflect.DeepEqual(upserted(old.Spec, old.Rejected), p) {
		return
	}
	e, probs := compilePeer(p)
	if !e.Valid && had && old.Valid {
		kept := *old
		kept.Rejected = p
		e = &kept
		probs = append(probs, keptProblem(bgpPeerObject(p.Name)))
	}
	in.Peers = in.Peers.Set(p.Name, e)
	t.setProblems(peerBucket(p.Name), probs)
	t.refreshPeer(p.Name)
}

func (t *tx) deletePeer(name string) {
	in := &t.s.Inputs
	if _, ok := in.Peers.Get(name); !ok {
		return
	}
	in.Peers = in.Peers.Delete(name)
	t.setProblems(peerBucket(name), nil)
	t.refreshPeer(name)
}

func (t *tx) upsertNode(n *state.Node) {
	in := &t.s.Inputs
	old, had := in.Nodes.Get(n.Name)
	if had && reflect.DeepEqual(upserted(old.Spec, old.Rejected), n) {
		return
	}
	var prev *state.NodeEntry
	if n.Name == t.s.Node {
		prev = old
	}
	e, probs := compileNode(n, prev)
	in.Nodes = in.Nodes.Set(n.Name, e)
	t.setProblems(nodeBucket(n.Name), probs)
	t.nodeChanged(n.Name, old, e)
}

func (t *tx) deleteNode(name string) {
	in := &t.s.Inputs
	old, had := in.Nodes.Get(name)
	if !had {
		return
	}
	in.Nodes = in.Nodes.Delete(name)
	t.setProblems(nodeBucket(name), nil)
	t.nodeChanged(name, old, nil)
}

// nodeChanged keeps the address index and re-derives what the node takes
// part in: everything when it is this node, else only its own sources and
// the neighbors at its addresses (whose port, AS, passivity or RR marking
// follow the node).
func (t *tx) nodeChanged(name string, old, cur *state.NodeEntry) {
	if attrsChanged(old, cur) {
		t.reindexAddrs(name, old, cur)
	}
	if name == t.s.Node {
		t.services = true // the exclusion label (docs/routes.md §8.4)
		if old != nil && cur != nil && !attrsChanged(old, cur) {
			t.localLabelsChanged(old, cur)
			return
		}
		t.full = true
		t.recheckAffinities() // docs/routes.md §11.1: no block covers N's address
		return
	}
	t.refreshNode(name)
}

// localLabelsChanged: this node's labels decide only which BGPPeers apply
// here and which select it for a reverse peering, so only the peers whose
// answer flipped are derived again: one selector test per peer instead of
// a full re-derivation.
func (t *tx) localLabelsChanged(old, cur *state.NodeEntry) {
	var flipped []string
	t.s.Inputs.Peers.Range(func(name string, p *state.PeerEntry) bool {
		if !p.Valid {
			return true
		}
		o4, o6 := t.reverseOf(p, old)
		n4, n6 := t.reverseOf(p, cur)
		if applies(p, old) != applies(p, cur) || o4 != n4 || o6 != n6 {
			flipped = append(flipped, name)
		}
		return true
	})
	for _, name := range flipped {
		t.refreshPeer(name)
	}
}

func attrsChanged(old, cur *state.NodeEntry) bool {
	if old == nil || cur == nil {
		return true
	}
	return old.V4 != cur.V4 || old.V6 != cur.V6 || old.ASN != cur.ASN || old.ClusterID != cur.ClusterID
}

// reindexAddrs keeps NodeByAddr, which holds every node at an address (so
// that when the owner, the smallest name, goes, the next one takes over).
func (t *tx) reindexAddrs(name string, old, cur *state.NodeEntry) {
	idx := &t.s.Index
	if old != nil {
		for _, a := range old.Addrs() {
			k := state.AddrKey(a)
			idx.NodeByAddr = idx.NodeByAddr.Delete(nodeAddrKey(k, name))
			t.markDirty(k)
		}
	}
	if cur != nil {
		for _, a := range cur.Addrs() {
			k := state.AddrKey(a)
			idx.NodeByAddr = idx.NodeByAddr.Set(nodeAddrKey(k, name), name)
			t.markDirty(k)
		}
	}
}

// nodeAt is the Calico node at an address: of several nodes sharing it,
// the smallest name.
func (t *tx) nodeAt(k string) string {
	var name string
	t.s.Index.NodeByAddr.RangeFrom(k+"/", func(key, n string) bool {
		if strings.HasPrefix(key, k+"/") {
			name = n
		}
		return false
	})
	return name
}

// upsertConfig keeps an invalid configuration out of force: its last valid
// version (if any) stays, and the invalid one is remembered as rejected.
func (t *tx) upsertConfig(c *state.BGPConfiguration) {
	in := &t.s.Inputs
	old, had := in.Configs.Get(c.Name)
	rej, wasRejected := in.RejectedConfigs.Get(c.Name)
	if (wasRejected && reflect.DeepEqual(rej, c)) || (!wasRejected && had && reflect.DeepEqual(old, c)) {
		return
	}
	probs, invalid := validateConfig(c)
	if !invalid {
		in.RejectedConfigs = in.RejectedConfigs.Delete(c.Name)
		in.Configs = in.Configs.Set(c.Name, c)
		t.setProblems(configBucket(c.Name), probs)
		t.configChanged(c.Name, old, c)
		return
	}
	in.RejectedConfigs = in.RejectedConfigs.Set(c.Name, c)
	if had {
		probs = append(probs, keptProblem(configObject(c.Name)))
	} else if c.Name == "default" {
		probs = append(probs, state.Problem{Object: configObject(c.Name), Reason: "invalid, with no last valid version: " +
			"the speaker and every neighbor whose AS, port or mesh settings come from it are held back until it is valid"})
		t.full = t.full || !wasRejected // docs/semantics.md §7: what depends on it is held from now
	}
	t.setProblems(configBucket(c.Name), probs)
}

func (t *tx) deleteConfig(name string) {
	in := &t.s.Inputs
	old, had := in.Configs.Get(name)
	if _, rej := in.RejectedConfigs.Get(name); rej {
		in.RejectedConfigs = in.RejectedConfigs.Delete(name)
		t.setProblems(configBucket(name), nil)
		t.full = t.full || (name == "default" && !had) // no longer held (defaultPending)
	}
	if !had {
		return
	}
	in.Configs = in.Configs.Delete(name)
	t.setProblems(configBucket(name), nil)
	t.configChanged(name, old, nil)
}

// configChanged: the default configuration and this node's own shape every
// neighbor and the server; another node's touches only that node. The log
// level alone changes nothing derived.
func (t *tx) configChanged(name string, old, cur *state.BGPConfiguration) {
	node, isNode := strings.CutPrefix(name, "node.")
	if name == "default" || (isNode && node == t.s.Node) {
		t.refreshCommunities()
	}
	if name == "default" {
		t.services = true // docs/routes.md §8.4
	}
	if old != nil && cur != nil && reflect.DeepEqual(neighborShape(*old), neighborShape(*cur)) {
		return
	}
	switch {
	case name == "default" || (isNode && node == t.s.Node):
		t.full = true
	case isNode:
		if e, ok := t.s.Inputs.Nodes.Get(node); ok {
			t.reindexAddrs(node, e, e)
		}
		t.refreshNode(node)
	}
}

// validateConfig returns a configuration's problems, and whether any makes
// it invalid (the others only say what is ignored).
func validateConfig(c *state.BGPConfiguration) (probs []state.Problem, invalid bool) {
	bad := func(format string, args ...any) {
		invalid = true
		probs = append(probs, state.Problem{Object: configObject(c.Name), Reason: fmt.Sprintf(format, args...)})
	}
	checkUnsupported(c.Unsupported, bad)
	if c.ListenPort < 0 || c.ListenPort > 65535 {
		bad("listenPort %d out of range 1-65535", c.ListenPort)
	}
	if c.ASNumber != 0 {
		checkASN(c.ASNumber, "asNumber", bad)
	}
	if c.NodeMeshMaxRestartTime != nil {
		checkRestartTime(c.NodeMeshMaxRestartTime.Duration, "nodeMeshMaxRestartTime", bad)
	}
	note := func(reason string) {
		probs = append(probs, state.Problem{Object: configObject(c.Name), Reason: reason})
	}
	notAppliedConfig(c, note, bad)
	_, commProbs := compileCommunities(c)
	probs = append(probs, commProbs...)
	if c.Name == "default" {
		_, rangeProbs := compileRanges(c) // docs/routes.md §11.3
		probs = append(probs, rangeProbs...)
	}
	if strings.HasPrefix(c.Name, "node.") {
		if c.ASNumber != 0 || c.NodeToNodeMeshEnabled != nil || c.NodeMeshPassword != nil || c.NodeMeshMaxRestartTime != nil ||
			c.BindMode != "" {
			note("a per-node configuration may set only listenPort, logSeverityScreen, communities and prefixAdvertisements; the rest is ignored")
		}
	} else if c.Name != "default" {
		note("only \"default\" and \"node.<name>\" configurations are read; this one is ignored")
	}
	return probs, invalid
}

// upserted is the object as last upserted: rejected when it was invalid
// and a last valid version is kept, else the spec.
func upserted[T any](spec, rejected *T) *T {
	if rejected != nil {
		return rejected
	}
	return spec
}

// keptText marks every problem saying an invalid object's last valid
// version stays in force.
const keptText = "keeping its last valid version in force until it is fixed or deleted"

func keptProblem(obj string) state.Problem {
	return state.Problem{Object: obj, Reason: "invalid; " + keptText}
}

func (t *tx) upsertFilter(f *state.BGPFilter) {
	in := &t.s.Inputs
	old, had := in.Filters.Get(f.Name)
	if had && !old.Deleted && reflect.DeepEqual(upserted(old.Spec, old.Rejected), f) {
		return
	}
	e := compileFilter(f)
	if e.Invalid != "" && had && old.Invalid == "" {
		kept := *old
		kept.Rejected, kept.RejectedReason, kept.Deleted = f, e.Invalid, false
		e = &kept
	}
	in.Filters = in.Filters.Set(f.Name, e)
	t.dirtyUsers(t.s.Index.FilterUsers, f.Name)
}

// deleteFilter honours the deletion, except that a filter neighbors still
// use keeps its last version applied to them (marked Deleted) until the
// last of them stops naming it (docs/semantics.md §7).
func (t *tx) deleteFilter(name string) {
	in := &t.s.Inputs
	old, ok := in.Filters.Get(name)
	if !ok || old.Deleted {
		return
	}
	if _, used := t.s.Index.FilterUsers.Get(name); used && old.Invalid == "" {
		kept := *old
		kept.Deleted = true
		in.Filters = in.Filters.Set(name, &kept)
	} else {
		in.Filters = in.Filters.Delete(name)
	}
	t.dirtyUsers(t.s.Index.FilterUsers, name)
}

func (t *tx) upsertSecret(sec *state.Secret) {
	in := &t.s.Inputs
	if old, ok := in.Secrets.Get(sec.Name); ok && maps.Equal(old.Data, sec.Data) {
		return
	}
	in.Secrets = in.Secrets.Set(sec.Name, sec)
	t.dirtyUsers(t.s.Index.SecretUsers, sec.Name)
}

func (t *tx) deleteSecret(name string) {
	in := &t.s.Inputs
	if _, ok := in.Secrets.Get(name); !ok {
		return
	}
	in.Secrets = in.Secrets.Delete(name)
	t.dirtyUsers(t.s.Index.SecretUsers, name)
}
