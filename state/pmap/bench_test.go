package pmap

import (
	"fmt"
	"testing"
)

var sizes = map[string]int{"1e3": 1_000, "1e5": 100_000, "1e6": 1_000_000}

func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%08d", i)
	}
	return keys
}

func benchMap(keys []string) *Map[int] {
	m := New[int]()
	for i, k := range keys {
		m = m.Set(k, i)
	}
	return m
}

// benchSizes runs bench once per size named, with that many keys and a
// map holding them.
func benchSizes(b *testing.B, names []string, bench func(b *testing.B, keys []string, m *Map[int])) {
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			keys := benchKeys(sizes[name])
			bench(b, keys, benchMap(keys))
		})
	}
}

func BenchmarkSet(b *testing.B) {
	benchSizes(b, []string{"1e3", "1e5"}, func(b *testing.B, keys []string, m *Map[int]) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			m.Set(keys[i%len(keys)], i) // overwrite: keeps n fixed
			i++
		}
	})
}

func BenchmarkGet(b *testing.B) {
	benchSizes(b, []string{"1e3", "1e5"}, func(b *testing.B, keys []string, m *Map[int]) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, ok := m.Get(keys[i%len(keys)]); !ok {
				b.Fatal("missing key")
			}
			i++
		}
	})
}

func BenchmarkDiff(b *testing.B) {
	benchSizes(b, []string{"1e3", "1e5", "1e6"}, func(b *testing.B, keys []string, old *Map[int]) {
		k := keys[len(keys)/3]
		// insert costs more than update: Diff must split at the new key.
		b.Run("update", func(b *testing.B) { benchDiff(b, old, old.Set(k, -1)) })
		b.Run("insert", func(b *testing.B) { benchDiff(b, old, old.Set(k+"x", -1)) })
	})
}

func benchDiff(b *testing.B, old, cur *Map[int]) {
	b.ReportAllocs()
	for b.Loop() {
		changes := 0
		Diff(old, cur, intEq, func(string, int, bool, int, bool) { changes++ })
		if changes != 1 {
			b.Fatalf("changes = %d, want 1", changes)
		}
	}
}
