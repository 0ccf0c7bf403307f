package pmap

// Map is an immutable sorted map. The zero value and nil are NOT required to
// work; use New.
type Map[V any] struct {
	root *node[V]
}

// New returns an empty map.
func New[V any]() *Map[V] {
	return &Map[V]{}
}

// top tolerates a nil receiver so read paths never panic on a nil map.
func (m *Map[V]) top() *node[V] {
	if m == nil {
		return nil
	}
	return m.root
}

// Len returns the number of keys in O(1).
func (m *Map[V]) Len() int {
	return m.top().count()
}

// Get returns the value stored under key and whether it was present.
func (m *Map[V]) Get(key string) (V, bool) {
	for n := m.top(); n != nil; {
		switch {
		case key < n.key:
			n = n.left
		case key > n.key:
			n = n.right
		default:
			return n.val, true
		}
	}
	var zero V
	return zero, false
}

// Set returns a new version with key bound to v; m is unchanged.
func (m *Map[V]) Set(key string, v V) *Map[V] {
	return &Map[V]{root: insert(m.top(), key, priority(key), v)}
}

// Delete returns a new version without key, or m itself when key is absent
// so callers can detect a no-op by pointer comparison.
func (m *Map[V]) Delete(key string) *Map[V] {
	root, found := remove(m.top(), key)
	if !found {
		return m
	}
	return &Map[V]{root: root}
}

// Range calls fn for each entry in ascending key order until fn returns false.
func (m *Map[V]) Range(fn func(key string, v V) bool) {
	walk(m.top(), fn)
}

// RangeFrom calls fn for each entry with key >= start in ascending key order
// until fn returns false. Prefix scans stop themselves by returning false.
func (m *Map[V]) RangeFrom(start string, fn func(key string, v V) bool) {
	walkFrom(m.top(), start, fn)
}

// Keys returns all keys in ascending order.
func (m *Map[V]) Keys() []string {
	keys := make([]string, 0, m.Len())
	m.Range(func(k string, _ V) bool {
		keys = append(keys, k)
		return true
	})
	return keys
}

func walk[V any](n *node[V], fn func(string, V) bool) bool {
	for n != nil {
		if !walk(n.left, fn) || !fn(n.key, n.val) {
			return false
		}
		n = n.right // loop instead of recursing keeps stack depth to left spines
	}
	return true
}

func walkFrom[V any](n *node[V], start string, fn func(string, V) bool) bool {
	for n != nil && n.key < start {
		n = n.right // everything left of n is also < start
	}
	if n == nil {
		return true
	}
	if !walkFrom(n.left, start, fn) || !fn(n.key, n.val) {
		return false
	}
	return walk(n.right, fn)
}
