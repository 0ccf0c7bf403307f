// Package pmap implements a persistent (immutable, structure-sharing) sorted
// map from string keys to values of any type, designed so that two versions
// can be compared cheaply.
//
// # Immutability
//
// A *Map is never modified after construction. Set and Delete return a new
// version that shares every subtree they did not touch with the receiver, so
// older versions stay valid and unchanged forever and are safe to read from
// many goroutines without locking. Delete of an absent key returns the
// receiver itself, letting callers detect "no change" by pointer comparison.
// Set always returns a new version, even when the value is equal to the
// stored one: value equality is the caller's business.
//
// # Canonical shape
//
// The map is a treap whose node priority is a fixed, process-independent hash
// of the key (FNV-1a 64 followed by a 64-bit mixer; hash ties are broken by
// key order). Priorities therefore form a total order determined by the keys
// alone, which makes the tree shape a pure function of the key set: the same
// keys give the same shape whatever order they were inserted or deleted in.
// Set and Delete copy O(log n) nodes (expected); Len is O(1). Apply makes a
// sorted batch of Sets and Deletes in bulk, with the tree the same edits
// one by one would give: one new node per key set, and copies only of the
// paths to the keys that change (building a map of n keys costs n nodes,
// not n log n).
//
// # Diff cost
//
// Diff walks two versions in parallel. Subtrees that are the same pointer in
// both are skipped without being read. Because shapes are canonical, two
// versions derived from a common ancestor line up node for node except along
// the paths touched by Set/Delete, so Diff costs O(k log n) for k changed keys
// (expected), not O(n). Maps built independently share no pointers; Diff is
// still correct for them, it just degrades towards O(n) comparisons.
//
// Diff's eq callback runs only for keys present on both sides whose nodes
// differ by pointer and whose value was not merely carried along by path
// copying (each node records which Set wrote its value), so it typically runs
// once per key passed to Set since the versions diverged, including Sets of
// an equal value.
//
// The zero Map value and a nil *Map are not part of the contract (use New),
// although read methods tolerate them; Diff explicitly accepts nil as empty.
package pmap
