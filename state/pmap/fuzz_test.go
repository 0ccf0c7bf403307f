package pmap

import (
	"fmt"
	"slices"
	"testing"
)

// FuzzDiff decodes data as a byte-pair program: the first ops build a base
// version a, the rest derive b from a. Diff must agree with plain maps both
// ways, and an independent rebuild of b must have b's exact shape.
//
// Each op is two bytes: the low 6 bits of the first pick one of 64 keys and
// the top 2 bits pick Set, Set, Delete or "Set the current value again"; the
// second byte is the value.
func FuzzDiff(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 1 {
			return
		}
		ops := data[1:]
		cut := 2 * (int(data[0]) % (len(ops)/2 + 1))
		pa := map[string]int{}
		a := apply(t, New[int](), pa, ops[:cut])
		pb := toMap(a)
		b := apply(t, a, pb, ops[cut:])

		checkInvariants(t, a)
		checkInvariants(t, b)
		if got, want := collect(a, b), bruteDiff(pa, pb); !slices.Equal(got, want) {
			t.Fatalf("Diff(a, b) = %v, want %v", got, want)
		}
		if got, want := collect(b, a), bruteDiff(pb, pa); !slices.Equal(got, want) {
			t.Fatalf("Diff(b, a) = %v, want %v", got, want)
		}
		rebuilt := New[int]()
		for k, v := range pb {
			rebuilt = rebuilt.Set(k, v)
		}
		if !sameShape(b.root, rebuilt.root) {
			t.Fatal("independent rebuild has a different shape")
		}
		if got := collect(b, rebuilt); len(got) != 0 {
			t.Fatalf("Diff against rebuild reported %v", got)
		}
		if b.Len() != len(pb) || len(b.Keys()) != len(pb) {
			t.Fatalf("Len = %d, Keys = %d, want %d", b.Len(), len(b.Keys()), len(pb))
		}
	})
}

func apply(t testing.TB, m *Map[int], plain map[string]int, ops []byte) *Map[int] {
	for i := 0; i+1 < len(ops); i += 2 {
		k := fmt.Sprintf("k%02d", ops[i]&0x3f)
		switch ops[i] >> 6 {
		case 2:
			next := m.Delete(k)
			if _, ok := plain[k]; ok == (next == m) {
				t.Fatalf("Delete(%q): pointer identity disagrees with presence", k)
			}
			m = next
			delete(plain, k)
		case 3:
			v := plain[k] // absent keys get the zero value, like a fresh Set
			m = m.Set(k, v)
			plain[k] = v
		default:
			m = m.Set(k, int(ops[i+1]))
			plain[k] = int(ops[i+1])
		}
	}
	return m
}
