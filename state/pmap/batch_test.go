package pmap

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// randomEdits is a batch over a small key space, sorted and distinct
// unless shuffled; about a third deletes, some of absent keys.
func randomEdits(rng *rand.Rand, n, space int, sorted bool) []Edit[int] {
	var out []Edit[int]
	for range n {
		out = append(out, Edit[int]{Key: fmt.Sprintf("k%03d", rng.IntN(space)), Val: rng.IntN(5), Delete: rng.IntN(3) == 0})
	}
	if sorted {
		slices.SortStableFunc(out, func(a, b Edit[int]) int { return strings.Compare(a.Key, b.Key) })
		out = slices.CompactFunc(out, func(a, b Edit[int]) bool { return a.Key == b.Key })
	}
	return out
}

func oneByOne(m *Map[int], edits []Edit[int]) *Map[int] {
	for _, e := range edits {
		if e.Delete {
			m = m.Delete(e.Key)
		} else {
			m = m.Set(e.Key, e.Val)
		}
	}
	return m
}

// TestApplyIsSetsAndDeletes: a batch gives the contents and the shape of
// its edits made one by one, leaves its receiver alone, and Diff against
// the receiver reports exactly what the batch changed, with eq run only
// for the keys the batch set.
func TestApplyIsSetsAndDeletes(t *testing.T) {
	for seq := range 600 {
		rng := rand.New(rand.NewPCG(uint64(seq), 7))
		space := 1 + rng.IntN(300)
		base := oneByOne(New[int](), randomEdits(rng, rng.IntN(400), space, false))
		before := toMap(base)
		edits := randomEdits(rng, rng.IntN(300), space, seq%4 != 0)
		got, want := base.Apply(edits), oneByOne(base, edits)
		checkInvariants(t, got)
		if !sameShape(got.root, want.root) {
			t.Fatalf("seq %d: Apply's tree differs from the edits one by one", seq)
		}
		if !mapsEqual(toMap(base), before) {
			t.Fatalf("seq %d: Apply changed its receiver", seq)
		}
		if g, w := collect(base, got), bruteDiff(before, toMap(want)); !slices.Equal(g, w) {
			t.Fatalf("seq %d: Diff after Apply = %v\nwant %v", seq, g, w)
		}
		set := map[string]bool{}
		for _, e := range edits {
			set[e.Key] = !e.Delete
		}
		var eqKeys []string
		walkBoth(base.root, got.root, func(k string) { eqKeys = append(eqKeys, k) })
		for _, k := range eqKeys {
			if !set[k] {
				t.Fatalf("seq %d: key %s was not set by the batch but its value changed revision", seq, k)
			}
		}
	}
}

// walkBoth calls fn for each key present in both trees whose node's value
// revision differs: where Diff would run eq.
func walkBoth(a, b *node[int], fn func(string)) {
	revs := map[string]uint64{}
	walkNodes(a, func(n *node[int]) { revs[n.key] = n.rev })
	walkNodes(b, func(n *node[int]) {
		if r, ok := revs[n.key]; ok && r != n.rev {
			fn(n.key)
		}
	})
}

func walkNodes(n *node[int], fn func(*node[int])) {
	if n == nil {
		return
	}
	walkNodes(n.left, fn)
	fn(n)
	walkNodes(n.right, fn)
}

func TestApplyEmptyAndNoChange(t *testing.T) {
	m := New[int]().Set("a", 1)
	if m.Apply(nil) != m {
		t.Fatal("an empty batch made a new version")
	}
	if m.Apply([]Edit[int]{{Key: "b", Delete: true}}) != m {
		t.Fatal("deleting an absent key made a new version")
	}
	if got := New[int]().Apply([]Edit[int]{{Key: "a", Val: 1}, {Key: "b", Val: 2}}); got.Len() != 2 {
		t.Fatalf("Len %d, want 2", got.Len())
	}
}

func BenchmarkApply(b *testing.B) {
	keys := benchKeys(sizes["1e5"])
	edits := make([]Edit[int], len(keys))
	for i, k := range keys {
		edits[i] = Edit[int]{Key: k, Val: i}
	}
	full := benchMap(keys)
	b.Run("build-1e5", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			New[int]().Apply(edits)
		}
	})
	b.Run("sets-1e5", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			oneByOne(New[int](), edits)
		}
	})
	b.Run("overwrite-1e5", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			full.Apply(edits)
		}
	})
}
