package pmap

import (
	"slices"
	"strings"
)

// Edit is one change of a batch (Apply): Key bound to Val, or Key removed
// when Delete is set.
type Edit[V any] struct {
	Key    string
	Val    V
	Delete bool
}

// Apply returns a new version with every edit made: the same contents and
// shape as the Sets and Deletes one by one, in order, would give, at a
// fraction of their cost for a large batch (one new node per key set, and
// only the paths to the keys of m that change are copied, not one path
// per edit). With edits sorted by key and no key twice it works in bulk;
// otherwise it makes them one by one. m is unchanged; an empty batch
// returns m.
func (m *Map[V]) Apply(edits []Edit[V]) *Map[V] {
	if len(edits) == 0 {
		return m
	}
	if !slices.IsSortedFunc(edits, func(a, b Edit[V]) int { return strings.Compare(a.Key, b.Key) }) || dupKey(edits) {
		for _, e := range edits {
			if e.Delete {
				m = m.Delete(e.Key)
			} else {
				m = m.Set(e.Key, e.Val)
			}
		}
		return m
	}
	var dels []string
	sets := make([]Edit[V], 0, len(edits))
	for _, e := range edits {
		if e.Delete {
			dels = append(dels, e.Key)
		} else {
			sets = append(sets, e)
		}
	}
	root := subtract(m.top(), dels)
	root = union(root, build(sets))
	if root == m.top() {
		return m
	}
	return &Map[V]{root: root}
}

func dupKey[V any](edits []Edit[V]) bool {
	for i := 1; i < len(edits); i++ {
		if edits[i].Key == edits[i-1].Key {
			return true
		}
	}
	return false
}

// build is the treap of sorted, distinct entries, in O(n): each entry
// goes onto the right spine, below the last entry that outranks it, and
// takes the entries it outranks as its left subtree. The nodes are new,
// so they are linked in place before anything can see them; each is an
// allocation of its own (a slab would live as long as any of its nodes).
func build[V any](es []Edit[V]) *node[V] {
	if len(es) == 0 {
		return nil
	}
	rev := revs.Add(uint64(len(es))) - uint64(len(es))
	spine := make([]*node[V], 0, 64)
	for _, e := range es {
		rev++
		n := &node[V]{key: e.Key, val: e.Val, prio: priority(e.Key), rev: rev}
		var below *node[V]
		for len(spine) > 0 && above(n.prio, n.key, spine[len(spine)-1]) {
			below = spine[len(spine)-1]
			spine = spine[:len(spine)-1]
		}
		n.left = below
		if len(spine) > 0 {
			spine[len(spine)-1].right = n
		}
		spine = append(spine, n)
	}
	fixSizes(spine[0])
	return spine[0]
}

func fixSizes[V any](n *node[V]) int {
	if n == nil {
		return 0
	}
	n.size = 1 + fixSizes(n.left) + fixSizes(n.right)
	return n.size
}

// union is a with every key of b bound to b's value; a is shared wherever
// b has no key. b's nodes are new and reachable from b alone (split
// copies the nodes it cuts through and drops the originals), so they are
// relinked in place.
func union[V any](a, b *node[V]) *node[V] {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case above(a.prio, a.key, b):
		// a's root outranks all of b, so b cannot hold its key.
		bl, _, br := split(b, a.key, nil)
		return a.with(union(a.left, bl), union(a.right, br))
	default:
		al, _, ar := split(a, b.key, nil) // a's node for b.key, if any, is replaced
		b.left, b.right = union(al, b.left), union(ar, b.right)
		b.size = 1 + b.left.count() + b.right.count()
		return b
	}
}

// subtract is t without the sorted keys; it copies only the paths to the
// keys t holds and returns t itself when it holds none.
func subtract[V any](t *node[V], keys []string) *node[V] {
	if t == nil || len(keys) == 0 {
		return t
	}
	i, found := slices.BinarySearch(keys, t.key)
	l := subtract(t.left, keys[:i])
	if found {
		i++
	}
	r := subtract(t.right, keys[i:])
	switch {
	case found:
		return merge(l, r)
	case l == t.left && r == t.right:
		return t
	}
	return t.with(l, r)
}
