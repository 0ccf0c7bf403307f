package reducer

import (
	"fmt"
	"net/netip"

	"github.com/peeragent/peeragent/state"
)

// Source keys: "p/PEER/ip" (a peerIP target), "p/PEER/f/NODE" (a peerSelector
// target), "p/PEER/r/NODE" (a reverse peering), "m/NODE" (the mesh). A
// source produces candidates; each is recomputed only when what it reads
// changes, and only the addresses whose candidates changed are resolved again.

type output struct {
	cands []state.Candidate
	probs []state.Problem
}

// applies reports whether a BGPPeer's node side selects node n.
func applies(p *state.PeerEntry, n *state.NodeEntry) bool {
	switch {
	case p.Global():
		return true
	case p.Spec.Node != "":
		return p.Spec.Node == n.Spec.Name
	default:
		return p.NodeSel != nil && p.NodeSel.Matches(n.Spec.Labels)
	}
}

// reverseOf reports whether a BGPPeer's peer side selects the local node,
// and in which families (docs/semantics.md §2.3).
func (t *tx) reverseOf(p *state.PeerEntry, l *state.NodeEntry) (v4, v6 bool) {
	if p.Spec.ReversePeering == "Manual" {
		return false, false
	}
	if p.PeerSel != nil {
		return p.PeerSel.Matches(l.Spec.Labels), p.PeerSel.Matches(l.Spec.Labels)
	}
	if p.ASN == t.asnOf(l) && p.IP.IsValid() && isLocalAddr(l, p.IP) {
		return p.IP.Is4(), p.IP.Is6()
	}
	return false, false
}

func peerClass(p *state.PeerEntry) state.Class {
	if p.Global() {
		return state.ClassGlobal
	}
	return state.ClassNodeSpecific
}

// nodeCands is one candidate per family both nodes have, restricted to the
// given families; never one of the local node's own addresses.
func (t *tx) nodeCands(l, m *state.NodeEntry, v4, v6 bool, c state.Candidate) []state.Candidate {
	var out []state.Candidate
	for _, fam := range []struct {
		on bool
		a  netip.Addr
		la netip.Addr
	}{{v4, m.V4, l.V4}, {v6, m.V6, l.V6}} {
		if !fam.on || !fam.a.IsValid() || !fam.la.IsValid() || isLocalAddr(l, fam.a) {
			continue
		}
		c.Addr = fam.a
		out = append(out, c)
	}
	return out
}

// peerSources computes every source of one BGPPeer for this node, and
// whether the peer belongs in the selector and reverse membership sets.
func (t *tx) peerSources(name string) (out map[string]output, sel, rev bool) {
	out = map[string]output{}
	p, ok := t.s.Inputs.Peers.Get(name)
	l := t.local()
	if !ok || !p.Valid || l == nil {
		return out, false, false
	}
	if applies(p, l) {
		if p.PeerSel != nil {
			sel = true
			t.s.Inputs.Nodes.Range(func(m string, n *state.NodeEntry) bool {
				put(out, forwardSource(name, m), t.forwardSel(p, l, n))
				return true
			})
		} else {
			k := peerIPSource(name)
			out[k] = t.forwardIP(p, l, k)
		}
	}
	if v4, v6 := t.reverseOf(p, l); v4 || v6 {
		rev = true
		t.s.Inputs.Nodes.Range(func(m string, n *state.NodeEntry) bool {
			put(out, reverseSource(name, m), t.reverse(p, l, n))
			return true
		})
	}
	return out, sel, rev
}

func put(m map[string]output, k string, o output) {
	if len(o.cands) > 0 || len(o.probs) > 0 {
		m[k] = o
	}
}

func (t *tx) forwardSel(p *state.PeerEntry, l, m *state.NodeEntry) output {
	if m.Spec.Name == t.s.Node || !p.PeerSel.Matches(m.Spec.Labels) {
		return output{}
	}
	c := state.Candidate{Class: peerClass(p), Peer: p.Spec.Name, Node: m.Spec.Name,
		Source: forwardSource(p.Spec.Name, m.Spec.Name)}
	return output{cands: t.nodeCands(l, m, true, true, c)}
}

func (t *tx) forwardIP(p *state.PeerEntry, l *state.NodeEntry, key string) output {
	if isLocalAddr(l, p.IP) {
		return output{} // never peer with yourself
	}
	if !l.Addr(p.IP.Is6()).IsValid() {
		fam := "IPv4"
		if p.IP.Is6() {
			fam = "IPv6"
		}
		return output{probs: []state.Problem{{Object: bgpPeerObject(p.Spec.Name),
			Reason: fmt.Sprintf("peerIP %s skipped on node %s: the node has no %s address", p.IP, t.s.Node, fam)}}}
	}
	return output{cands: []state.Candidate{{Addr: p.IP, Class: peerClass(p), Peer: p.Spec.Name, Source: key}}}
}

func (t *tx) reverse(p *state.PeerEntry, l, m *state.NodeEntry) output {
	if m.Spec.Name == t.s.Node || !applies(p, m) {
		return output{}
	}
	v4, v6 := t.reverseOf(p, l)
	c := state.Candidate{Class: state.ClassReverse, Peer: p.Spec.Name, Node: m.Spec.Name,
		Source: reverseSource(p.Spec.Name, m.Spec.Name)}
	return output{cands: t.nodeCands(l, m, v4, v6, c)}
}

func (t *tx) mesh(l, m *state.NodeEntry) output {
	if m.Spec.Name == t.s.Node || !t.meshEnabled() || l.ClusterID != "" || m.ClusterID != "" {
		return output{}
	}
	c := state.Candidate{Class: state.ClassMesh, Node: m.Spec.Name, Source: meshSource(m.Spec.Name)}
	return output{cands: t.nodeCands(l, m, true, true, c)}
}

// refreshPeer recomputes one BGPPeer's sources.
func (t *tx) refreshPeer(name string) {
	if t.full {
		return
	}
	out, sel, rev := t.peerSources(name)
	idx := &t.s.Index
	idx.SelPeers = setMember(idx.SelPeers, name, sel)
	idx.RevPeers = setMember(idx.RevPeers, name, rev)
	t.applySources(t.sourceKeys(peerSources(name)), out, true)
}

// refreshNode recomputes the sources another node takes part in: its mesh
// source and its target sources under selector and reverse peers.
func (t *tx) refreshNode(name string) {
	if t.full {
		return
	}
	out := map[string]output{}
	old := []string{meshSource(name)}
	l := t.local()
	m, ok := t.s.Inputs.Nodes.Get(name)
	if ok && l != nil {
		put(out, meshSource(name), t.mesh(l, m))
	}
	t.s.Index.SelPeers.Range(func(p string, _ struct{}) bool {
		k := forwardSource(p, name)
		old = append(old, k)
		if pe, _ := t.s.Inputs.Peers.Get(p); ok && l != nil {
			put(out, k, t.forwardSel(pe, l, m))
		}
		return true
	})
	t.s.Index.RevPeers.Range(func(p string, _ struct{}) bool {
		k := reverseSource(p, name)
		old = append(old, k)
		if pe, _ := t.s.Inputs.Peers.Get(p); ok && l != nil {
			put(out, k, t.reverse(pe, l, m))
		}
		return true
	})
	t.applySources(old, out, false)
}
