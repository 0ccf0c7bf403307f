package pmap

// Diff calls fn for every key whose presence or value differs between a and
// b, in ascending key order. eq decides value equality for keys present in
// both (called only when the nodes differ by pointer). Either map may be nil,
// meaning empty.
//
// eq is further skipped for nodes that were merely path-copied, so for
// versions with a common ancestor it runs once per key actually passed to
// Set since they diverged, not once per copied ancestor.
func Diff[V any](a, b *Map[V], eq func(x, y V) bool, fn func(key string, old V, hadOld bool, new V, hasNew bool)) {
	d := differ[V]{eq: eq, fn: fn}
	d.diff(a.top(), b.top())
}

// differ carries the callbacks through the recursion and counts the nodes it
// dereferences, so tests can assert on cost without timing anything.
type differ[V any] struct {
	eq      func(x, y V) bool
	fn      func(key string, old V, hadOld bool, new V, hasNew bool)
	visited int
}

func (d *differ[V]) diff(x, y *node[V]) {
	if x == y {
		return // shared subtree: the whole point of structure sharing
	}
	switch {
	case x == nil:
		d.emitAll(y, false)
	case y == nil:
		d.emitAll(x, true)
	case x.key == y.key:
		d.visited += 2
		d.diff(x.left, y.left)
		if x.rev != y.rev && !d.eq(x.val, y.val) {
			d.fn(x.key, x.val, true, y.val, true)
		}
		d.diff(x.right, y.right)
	case above(x.prio, x.key, y):
		// x's root outranks every key in y, so if y held it, it would be
		// y's root; hence it is absent from y.
		d.visited++
		yl, yr := d.split(y, x.key)
		d.diff(x.left, yl)
		d.fn(x.key, x.val, true, zero[V](), false)
		d.diff(x.right, yr)
	default:
		d.visited++
		xl, xr := d.split(x, y.key)
		d.diff(xl, y.left)
		d.fn(y.key, zero[V](), false, y.val, true)
		d.diff(xr, y.right)
	}
}

// split is the tree split plus cost accounting. The middle node is always
// nil here (see the callers), so it is dropped.
func (d *differ[V]) split(t *node[V], key string) (l, r *node[V]) {
	l, _, r = split(t, key, &d.visited)
	return l, r
}

// emitAll reports a whole one-sided subtree; every node in it is a change,
// so visiting all of them is within the O(changes) budget.
func (d *differ[V]) emitAll(n *node[V], removed bool) {
	walk(n, func(k string, v V) bool {
		d.visited++
		if removed {
			d.fn(k, v, true, zero[V](), false)
		} else {
			d.fn(k, zero[V](), false, v, true)
		}
		return true
	})
}

// zero is V's zero value: a local one, not a field of the differ, so that
// handing it to the callback does not make the differ (and the callbacks
// it holds, the caller's closures) escape to the heap.
func zero[V any]() (z V) { return z }
