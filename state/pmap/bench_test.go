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

func BenchmarkSet(b *testing.B) {
	for _, name := range []string{"1e3", "1e5"} {
		b.Run(name, func(b *testing.B) {
			keys := benchKeys(sizes[name])
			m := benchMap(keys)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				m.Set(keys[i%len(keys)], i) // overwrite: keeps n fixed
				i++
			}
		})
	}
}

func BenchmarkGet(b *testing.B) {
	for _, name := range []string{"1e3", "1e5"} {
		b.Run(name, func(b *testing.B) {
			keys := benchKeys(sizes[name])
			m := benchMap(keys)
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
}

func BenchmarkDiff(b *testing.B) {
	for _, name := range []string{"1e3", "1e5", "1e6"} {
		b.Run(name, func(b *testing.B) {
			keys := benchKeys(sizes[name])
			old := benchMap(keys)
			k := keys[len(keys)/3]
			// insert costs more than update: Diff must split at the new key.
			b.Run("update", func(b *testing.B) { benchDiff(b, old, old.Set(k, -1)) })
			b.Run("insert", func(b *testing.B) { benchDiff(b, old, old.Set(k+"x", -1)) })
		})
	}
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
