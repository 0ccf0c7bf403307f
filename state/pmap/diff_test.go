package pmap

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// mutate applies n random Set/Delete operations over a small key space so
// that overwrites, deletes of absent keys and re-inserts are all common.
func mutate(rng *rand.Rand, m *Map[int], plain map[string]int, n, space int) *Map[int] {
	for range n {
		k := fmt.Sprintf("k%03d", rng.IntN(space))
		switch rng.IntN(4) {
		case 0:
			m = m.Delete(k)
			delete(plain, k)
		case 1: // same value: Diff must not report it
			v := plain[k]
			m = m.Set(k, v)
			plain[k] = v
		default:
			v := rng.IntN(5)
			m = m.Set(k, v)
			plain[k] = v
		}
	}
	return m
}

func TestDiffRandom(t *testing.T) {
	for seq := range 500 {
		rng := rand.New(rand.NewPCG(uint64(seq), 99))
		space := 1 + rng.IntN(200)
		pa := map[string]int{}
		a := mutate(rng, New[int](), pa, rng.IntN(300), space)
		var b *Map[int]
		pb := map[string]int{}
		if seq%5 == 0 { // unrelated build: no shared pointers at all
			b = mutate(rng, New[int](), pb, rng.IntN(300), space)
		} else {
			pb = toMap(a)
			b = mutate(rng, a, pb, rng.IntN(20), space)
		}
		checkInvariants(t, b)
		if got, want := collect(a, b), bruteDiff(pa, pb); !slices.Equal(got, want) {
			t.Fatalf("seq %d: Diff = %v\nwant %v", seq, got, want)
		}
		if got, want := collect(b, a), bruteDiff(pb, pa); !slices.Equal(got, want) {
			t.Fatalf("seq %d: reverse Diff = %v\nwant %v", seq, got, want)
		}
	}
}

func TestDiffNil(t *testing.T) {
	m := New[int]().Set("a", 1).Set("b", 2)
	cases := []struct {
		name string
		a, b *Map[int]
		want []change
	}{
		{"both-nil", nil, nil, nil},
		{"nil-to-map", nil, m, []change{{"a", 0, 1, false, true}, {"b", 0, 2, false, true}}},
		{"map-to-nil", m, nil, []change{{"a", 1, 0, true, false}, {"b", 2, 0, true, false}}},
		{"empty-to-nil", New[int](), nil, nil},
		{"same-version", m, m, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := collect(tc.a, tc.b); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDiffEqOnlyForWrittenValues pins that path-copied ancestors do not
// cost an eq call: eq may be expensive (deep comparison of state structs).
func TestDiffEqOnlyForWrittenValues(t *testing.T) {
	m := New[int]()
	for i := range 1000 {
		m = m.Set(fmt.Sprintf("%04d", i), i)
	}
	n := m.Set("0500", 500) // same value, new node
	calls := 0
	Diff(m, n, func(x, y int) bool { calls++; return x == y },
		func(string, int, bool, int, bool) { t.Error("unexpected change") })
	if calls != 1 {
		t.Errorf("eq called %d times, want 1 (only the rewritten key)", calls)
	}
}

// visits runs a Diff and returns how many nodes it dereferenced.
func visits(a, b *Map[int]) (int, []change) {
	var out []change
	d := differ[int]{eq: intEq, fn: func(k string, o int, ho bool, n int, hn bool) {
		out = append(out, change{k, o, n, ho, hn})
	}}
	d.diff(a.top(), b.top())
	return d.visited, out
}

func TestDiffCost(t *testing.T) {
	const n = 100_000
	const budget = 200
	base := New[int]()
	for i := range n {
		base = base.Set(fmt.Sprintf("key-%07d", i), i)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	worst := 0
	cases := []struct {
		name  string
		apply func(k string) *Map[int]
		key   func() string
	}{
		{"update-value", func(k string) *Map[int] { return base.Set(k, -1) }, existingKey(rng, n)},
		{"insert-key", func(k string) *Map[int] { return base.Set(k, -1) }, newKey(rng, n)},
		{"delete-key", func(k string) *Map[int] { return base.Delete(k) }, existingKey(rng, n)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for range 50 {
				k := tc.key()
				next := tc.apply(k)
				for _, pair := range [][2]*Map[int]{{base, next}, {next, base}} {
					cost, got := visits(pair[0], pair[1])
					if len(got) != 1 || got[0].Key != k {
						t.Fatalf("key %q: changes %v, want exactly that key", k, got)
					}
					worst = max(worst, cost)
					if cost >= budget {
						t.Errorf("key %q: visited %d nodes, want < %d", k, cost, budget)
					}
				}
			}
		})
	}
	if cost, _ := visits(base, base); cost != 0 {
		t.Errorf("identical versions visited %d nodes, want 0", cost)
	}
	t.Logf("worst single-change visit count over %d keys: %d", n, worst)
}

func existingKey(rng *rand.Rand, n int) func() string {
	return func() string { return fmt.Sprintf("key-%07d", rng.IntN(n)) }
}

func newKey(rng *rand.Rand, n int) func() string {
	return func() string { return fmt.Sprintf("key-%07d.5", rng.IntN(n)) }
}

// TestDiffKeepsCallbacksOnTheStack: Diff of maps of pointers, with
// callbacks that capture the caller's variables (as every caller's do),
// allocates nothing for a change found by an update or as a whole new
// subtree: the callbacks and what they capture stay on the caller's stack
// (a field of the differ handed to the callback made them all escape).
func TestDiffKeepsCallbacksOnTheStack(t *testing.T) {
	one, two := 1, 2
	old := New[*int]()
	for i := range 100 {
		old = old.Set(fmt.Sprintf("k%03d", i), &one)
	}
	for _, tt := range []struct {
		name string
		a, b *Map[*int]
	}{{"update", old, old.Set("k050", &two)}, {"from-empty", New[*int](), old}, {"to-empty", old, New[*int]()}} {
		var seen int
		allocs := testing.AllocsPerRun(100, func() {
			n := 0 // a variable of the caller's, captured
			Diff(tt.a, tt.b, func(x, y *int) bool { return x == y },
				func(string, *int, bool, *int, bool) { n++ })
			seen = n
		})
		if seen == 0 || allocs != 0 {
			t.Errorf("%s: %d changes, %.0f allocations a Diff, want some and 0", tt.name, seen, allocs)
		}
	}
}
