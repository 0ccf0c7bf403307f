package reducer

import (
	"fmt"
	"time"

	"github.com/peeragent/peeragent/state"
)

// resolve turns the best candidate at an address into the Neighbor, with
// its conflicts, dependencies and session step. It is the single place a
// neighbor changes.
func (t *tx) resolve(k string) {
	cands, _ := t.s.Index.Cands.Get(k)
	old, _ := t.s.Out.Neighbors.Get(k)
	var n *state.Neighbor
	var probs []state.Problem
	if len(cands) > 0 {
		n, probs = t.build(k, cands[0])
		probs = append(probs, conflicts(cands)...)
	}
	t.setProblems(addrBucket(k), probs)
	t.updateDeps(k, old, n)
	if n.Equal(old) {
		n = old
	} else if n == nil {
		t.s.Out.Neighbors = t.s.Out.Neighbors.Delete(k)
	} else {
		t.s.Out.Neighbors = t.s.Out.Neighbors.Set(k, n)
	}
	if keyed(old) != keyed(n) {
		t.keysChanged = true
	}
	if needsStep(old, n) || (t.restart && n.Active()) {
		t.step(k, old, n)
	}
}

func keyed(n *state.Neighbor) bool { return n.Active() && !n.Password.IsZero() }

// needsStep: the session moves only when the speaker or VPP will be told
// something, so that every generation it waits for gets a result.
func needsStep(old, n *state.Neighbor) bool {
	if old.Active() != n.Active() {
		return true
	}
	if !n.Active() {
		return (old == nil) != (n == nil)
	}
	return !old.SameConfig(n)
}

func origin(c state.Candidate) string {
	switch c.Class {
	case state.ClassMesh:
		return "mesh"
	case state.ClassReverse:
		return "reverse/" + c.Peer
	}
	return bgpPeerObject(c.Peer)
}

// conflicts reports the losers at one address that deserve a word: another
// BGPPeer, or the mesh beaten by a BGPPeer. A peer's reverse peering that
// duplicates its own forward one is not a conflict.
func conflicts(cands []state.Candidate) []state.Problem {
	w := cands[0]
	var out []state.Problem
	for _, c := range cands[1:] {
		var p state.Problem
		switch {
		case c.Peer != "" && c.Peer != w.Peer:
			p = state.Problem{Object: bgpPeerObject(c.Peer), Reason: fmt.Sprintf(
				"neighbor %s is also wanted by %s, which takes precedence", c.Addr, origin(w))}
		case c.Peer == "" && w.Peer != "":
			p = state.Problem{Object: "mesh", Reason: fmt.Sprintf(
				"neighbor %s (node %s) is configured by %s instead of the mesh", c.Addr, c.Node, origin(w))}
		case c.Peer == "" && c.Node != w.Node:
			p = state.Problem{Object: nodeObject(c.Node), Reason: fmt.Sprintf(
				"address %s is also node %s's; the mesh peers with it once", c.Addr, w.Node)}
		default:
			continue
		}
		if len(out) == 0 || out[len(out)-1] != p {
			out = append(out, p)
		}
	}
	return out
}

// build computes every setting of docs/semantics.md §3 for the winning candidate.
func (t *tx) build(k string, c state.Candidate) (*state.Neighbor, []state.Problem) {
	l := t.local()
	p, _ := t.s.Inputs.Peers.Get(c.Peer)
	remote := t.remoteNode(k, c)
	v6 := c.Addr.Is6()
	n := &state.Neighbor{Address: c.Addr, Origin: origin(c), LocalASN: t.asnOf(l),
		Port: defaultPort, SourceAddress: l.Addr(v6), Filters: []string{}}
	t.peering(n, c, p, l, remote)
	restart := defaultRestartTime
	var ref *state.SecretKeyRef
	var probs []state.Problem
	if p == nil {
		ref = t.defaults().NodeMeshPassword
		if d := t.defaults().NodeMeshMaxRestartTime; d != nil {
			restart = d.Duration
		}
	} else {
		ref = p.Spec.Password
		if d := p.Spec.MaxRestartTime; d != nil {
			restart = d.Duration
		}
		if d := p.Spec.KeepaliveTime; d != nil {
			n.KeepaliveSeconds = uint32(restartSeconds(d.Duration) / time.Second)
		}
		probs = t.peerSettings(n, p, c)
	}
	n.GracefulRestartSeconds = uint32(restartSeconds(restart) / time.Second)
	n.MaxPrefixes = t.s.Options.MaxPrefixes // docs/routes.md §9.9
	if p != nil && p.MaxPrefixes != 0 {
		n.MaxPrefixes = p.MaxPrefixes // the BGPPeer's annotation
	}
	if n.PeerASN != n.LocalASN && n.TTLMin == 0 {
		n.EBGPMultihopTTL = 255
	}
	t.markRR(n, l, remote)
	n.Policy.CalicoExport = true // docs/routes.md §8.3, appendix C (C7)
	n.Families = t.families(v6)
	if t.defaultPending() && (p == nil || t.readsDefault(l) || t.readsDefault(remote)) {
		n.Waiting = "bgpconfiguration default"
		probs = append(probs, state.Problem{Object: heldObject(n, c), Reason: fmt.Sprintf(
			"neighbor %s held back: bgpconfiguration default is invalid and has no last valid version, and the neighbor depends on it", n.Address)})
	}
	if pr := t.password(k, n, ref); pr != nil {
		pr.Object = n.Origin
		if c.Class == state.ClassReverse {
			pr.Object = bgpPeerObject(c.Peer)
		}
		probs = append(probs, *pr)
	}
	return n, probs
}

// peering sets the port, the peer's AS number and the passive side of a
// neighbor (docs/semantics.md §3): a Calico node's port and AS follow the
// node, and of two Calico nodes the higher address waits to be dialled.
func (t *tx) peering(n *state.Neighbor, c state.Candidate, p *state.PeerEntry, l, remote *state.NodeEntry) {
	if remote != nil && (c.Node != "" || p.ASN == t.asnOf(remote)) {
		n.Port = t.portOf(remote.Spec.Name)
	}
	if c.Class == state.ClassReverse && p.LocalASN != 0 {
		// The node side presents the BGPPeer's localASNumber to us.
		n.PeerASN = p.LocalASN
	} else if c.Node != "" {
		n.PeerASN = t.asnOf(remote)
	} else {
		n.PeerASN = p.ASN
	}
	if remote != nil {
		n.Passive = c.Addr.String() > l.Addr(c.Addr.Is6()).String()
	}
}

// heldObject is the object a problem about a held-back neighbor names.
func heldObject(n *state.Neighbor, c state.Candidate) string {
	if c.Class == state.ClassReverse {
		return bgpPeerObject(c.Peer)
	}
	return n.Origin
}

// remoteNode is the Calico node behind a neighbor: the candidate's own, or
// the node owning a peerIP.
func (t *tx) remoteNode(k string, c state.Candidate) *state.NodeEntry {
	name := c.Node
	if name == "" {
		name = t.nodeAt(k)
	}
	if name == "" {
		return nil
	}
	n, _ := t.s.Inputs.Nodes.Get(name)
	return n
}

func (t *tx) peerSettings(n *state.Neighbor, p *state.PeerEntry, c state.Candidate) []state.Problem {
	s := p.Spec
	if c.Class != state.ClassReverse && p.LocalASN != 0 {
		n.LocalASN = p.LocalASN
	}
	if c.Node == "" && p.Port != 0 {
		n.Port = p.Port
	}
	if s.SourceAddress == "None" {
		n.SourceAddress = netipZero
	}
	if s.TTLSecurity > 0 {
		n.TTLMin = uint8(255 - s.TTLSecurity)
		if t.s.Options.TTLExactHop {
			n.TTLMin++
		}
	}
	n.AllowOwnASN = uint8(s.NumAllowedLocalASNumbers)
	n.ReachableBy = p.Reach
	return t.policy(n, p)
}
