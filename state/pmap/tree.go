package pmap

import "sync/atomic"

// node is never mutated once it is reachable from a Map; all updates copy.
type node[V any] struct {
	key         string
	val         V
	prio        uint64
	rev         uint64 // who wrote val; path copies keep it, see Diff
	size        int
	left, right *node[V]
}

// revs hands out process-unique value revisions. Equal revs on two nodes
// mean the value was carried over by path copying, so Diff can skip eq for
// the O(log n) ancestors that every update copies.
var revs atomic.Uint64

func (n *node[V]) count() int {
	if n == nil {
		return 0
	}
	return n.size
}

// FNV-1a 64 constants.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// priority must be identical in every process so that shapes (and therefore
// anything derived from them, such as Diff order of work) are reproducible.
// FNV-1a alone leaves keys that differ only in their last byte with poorly
// mixed high bits, which skews treap balance for sequential keys such as
// "item-0001"; the murmur3 finalizer removes that correlation.
func priority(key string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= fnvPrime
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// above reports whether a node with (prio, key) belongs above n. Breaking
// hash ties by key makes priorities a total order, which is what makes the
// shape canonical.
func above[V any](prio uint64, key string, n *node[V]) bool {
	if prio != n.prio {
		return prio > n.prio
	}
	return key < n.key
}

// with returns a copy of n with new children; it is the only way nodes on a
// modified path are produced, so sizes can never go stale.
func (n *node[V]) with(left, right *node[V]) *node[V] {
	c := *n
	c.left, c.right = left, right
	c.size = 1 + left.count() + right.count()
	return &c
}

func insert[V any](t *node[V], key string, prio uint64, v V) *node[V] {
	if t == nil {
		return &node[V]{key: key, val: v, prio: prio, rev: revs.Add(1), size: 1}
	}
	switch {
	case key == t.key:
		c := *t
		c.val, c.rev = v, revs.Add(1)
		return &c
	case above(prio, key, t):
		// key cannot be inside t: it would have to be t's root.
		l, _, r := split(t, key, nil)
		n := &node[V]{key: key, val: v, prio: prio, rev: revs.Add(1)}
		return n.with(l, r)
	case key < t.key:
		return t.with(insert(t.left, key, prio, v), t.right)
	default:
		return t.with(t.left, insert(t.right, key, prio, v))
	}
}

// split partitions t into keys < key and keys > key, returning the node for
// key itself (if any) separately. Only the nodes on the search path are
// copied; everything hanging off it is shared. cost, when non-nil, is
// incremented per copied node so Diff's accounting includes splits.
func split[V any](t *node[V], key string, cost *int) (l, mid, r *node[V]) {
	if t == nil {
		return nil, nil, nil
	}
	if cost != nil && t.key != key {
		*cost++
	}
	switch {
	case key < t.key:
		l, mid, rr := split(t.left, key, cost)
		return l, mid, t.with(rr, t.right)
	case key > t.key:
		ll, mid, r := split(t.right, key, cost)
		return t.with(t.left, ll), mid, r
	default:
		return t.left, t, t.right
	}
}

// merge joins l and r, all of whose keys must be below all of r's keys.
func merge[V any](l, r *node[V]) *node[V] {
	switch {
	case l == nil:
		return r
	case r == nil:
		return l
	case above(l.prio, l.key, r):
		return l.with(l.left, merge(l.right, r))
	default:
		return r.with(merge(l, r.left), r.right)
	}
}

// remove copies nothing when key is absent, so Delete can return its
// receiver unchanged.
func remove[V any](t *node[V], key string) (*node[V], bool) {
	if t == nil {
		return nil, false
	}
	switch {
	case key < t.key:
		l, ok := remove(t.left, key)
		if !ok {
			return t, false
		}
		return t.with(l, t.right), true
	case key > t.key:
		r, ok := remove(t.right, key)
		if !ok {
			return t, false
		}
		return t.with(t.left, r), true
	default:
		return merge(t.left, t.right), true
	}
}
