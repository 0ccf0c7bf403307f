package reducer

import (
	"slices"
	"strings"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

func setMember(m *pmap.Map[struct{}], k string, in bool) *pmap.Map[struct{}] {
	_, had := m.Get(k)
	switch {
	case in && !had:
		return m.Set(k, struct{}{})
	case !in && had:
		return m.Delete(k)
	}
	return m
}

// applySources replaces the outputs of the given old source keys and of
// every key in out; sources whose candidates are unchanged touch nothing.
//
// With touch, every address the sources had or have is resolved again even
// when the candidates are equal: candidates name their BGPPeer, so a change
// to the peer's settings reaches its neighbors only this way.
func (t *tx) applySources(old []string, out map[string]output, touch bool) {
	for _, k := range old {
		if touch {
			t.touch(k)
		}
		if _, ok := out[k]; !ok {
			t.setSource(k, output{})
		}
	}
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.setSource(k, out[k])
		if touch {
			t.touch(k)
		}
	}
}

func (t *tx) touch(source string) {
	cands, _ := t.s.Index.Sources.Get(source)
	for _, c := range cands {
		t.markDirty(state.AddrKey(c.Addr))
	}
}

// sourceKeys lists the sources under prefix that hold candidates or
// problems. A source with problems only (a peerIP in a family this node
// lacks) has no candidates, yet its problem must go when the source does.
func (t *tx) sourceKeys(prefix string) []string {
	var keys []string
	t.s.Index.Sources.RangeFrom(prefix, func(k string, _ []state.Candidate) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		keys = append(keys, k)
		return true
	})
	sp := sourceBucket(prefix)
	t.s.Out.Problems.RangeFrom(sp, func(k string, _ []state.Problem) bool {
		if !strings.HasPrefix(k, sp) {
			return false
		}
		keys = append(keys, strings.TrimPrefix(k, srcBucket))
		return true
	})
	slices.Sort(keys)
	return slices.Compact(keys)
}

func (t *tx) setSource(key string, o output) {
	idx := &t.s.Index
	t.setProblems(sourceBucket(key), o.probs)
	old, had := idx.Sources.Get(key)
	if slices.Equal(old, o.cands) {
		return
	}
	for _, c := range old {
		t.dropCand(c)
	}
	for _, c := range o.cands {
		t.addCand(c)
	}
	if len(o.cands) == 0 {
		if had {
			idx.Sources = idx.Sources.Delete(key)
		}
		return
	}
	idx.Sources = idx.Sources.Set(key, o.cands)
}

// less orders candidates by precedence (docs/semantics.md §2.7): class, then the
// smallest BGPPeer name, then node and source for a total order, so the
// winner never depends on arrival order.
func less(a, b state.Candidate) int {
	switch {
	case a.Class != b.Class:
		return int(a.Class) - int(b.Class)
	case a.Peer != b.Peer:
		return strings.Compare(a.Peer, b.Peer)
	case a.Node != b.Node:
		return strings.Compare(a.Node, b.Node)
	}
	return strings.Compare(a.Source, b.Source)
}

func (t *tx) addCand(c state.Candidate) {
	idx := &t.s.Index
	k := state.AddrKey(c.Addr)
	cur, _ := idx.Cands.Get(k)
	i, _ := slices.BinarySearchFunc(cur, c, less)
	next := slices.Insert(slices.Clone(cur), i, c)
	idx.Cands = idx.Cands.Set(k, next)
	t.markDirty(k)
}

func (t *tx) dropCand(c state.Candidate) {
	idx := &t.s.Index
	k := state.AddrKey(c.Addr)
	cur, _ := idx.Cands.Get(k)
	i := slices.Index(cur, c)
	if i < 0 {
		return
	}
	if len(cur) == 1 {
		idx.Cands = idx.Cands.Delete(k)
	} else {
		idx.Cands = idx.Cands.Set(k, slices.Delete(slices.Clone(cur), i, i+1))
	}
	t.markDirty(k)
}

// rederiveAll recomputes every source, for changes that shape all of this
// node's neighbors (its own labels, addresses or AS, the default
// configuration). Unchanged sources and neighbors keep their old values.
func (t *tx) rederiveAll() {
	t.full = false
	idx := &t.s.Index
	out := map[string]output{}
	sel, rev := pmap.New[struct{}](), pmap.New[struct{}]()
	t.s.Inputs.Peers.Range(func(name string, _ *state.PeerEntry) bool {
		o, isSel, isRev := t.peerSources(name)
		for k, v := range o {
			out[k] = v
		}
		sel, rev = setMember(sel, name, isSel), setMember(rev, name, isRev)
		return true
	})
	idx.SelPeers, idx.RevPeers = keepIfEqual(idx.SelPeers, sel), keepIfEqual(idx.RevPeers, rev)
	if l := t.local(); l != nil {
		t.s.Inputs.Nodes.Range(func(name string, m *state.NodeEntry) bool {
			put(out, meshSource(name), t.mesh(l, m))
			return true
		})
	}
	t.applySources(t.sourceKeys(""), out, false)
	idx.Cands.Range(func(k string, _ []state.Candidate) bool { t.markDirty(k); return true })
	t.s.Out.Sessions.Range(func(k string, _ *state.Session) bool { t.markDirty(k); return true })
	t.setServer(t.server())
}

func keepIfEqual(old, cur *pmap.Map[struct{}]) *pmap.Map[struct{}] {
	same := old.Len() == cur.Len()
	pmap.Diff(old, cur, func(_, _ struct{}) bool { return true },
		func(string, struct{}, bool, struct{}, bool) { same = false })
	if same {
		return old
	}
	return cur
}
