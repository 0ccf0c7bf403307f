package clustergen

import (
	"reflect"
	"testing"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/watch"
)

func testConfig(seed uint64) Config {
	return Config{Seed: seed, Nodes: 6, Peers: 40, Global: 0.3, Selected: 0.3,
		Password: 0.3, Filtered: 0.3, Filters: 3, ListenPort: 1790, Reflector: true}
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, b, c := Generate(testConfig(1)), Generate(testConfig(1)), Generate(testConfig(2))
	if !reflect.DeepEqual(a, b) {
		t.Error("the same seed gave two clusters")
	}
	if reflect.DeepEqual(a.Peers, c.Peers) {
		t.Error("two seeds gave the same peers")
	}
	if len(a.Secrets) == 0 || len(a.Secrets) == 40 {
		t.Errorf("want some peers with a password, got %d of 40", len(a.Secrets))
	}
}

// TestEveryPeerIsANeighbor: the mesh gives one neighbor per remote node and
// every generated peer one more, whatever its kind, with no problem.
func TestEveryPeerIsANeighbor(t *testing.T) {
	c := Generate(testConfig(3))
	s := state.New(c.Local, state.Options{})
	for _, a := range c.Actions() {
		s = reducer.Reduce(s, a)
	}
	if got, want := s.Out.Neighbors.Len(), 5+40; got != want {
		t.Errorf("neighbors: got %d, want %d", got, want)
	}
	if ps := s.AllProblems(); len(ps) > 0 {
		t.Errorf("problems: %v", ps)
	}
}

// TestChurnChangesOneNeighbor: every churn event, applied in order, makes
// exactly one speaker call group, for the address it names.
func TestChurnChangesOneNeighbor(t *testing.T) {
	c := Generate(testConfig(4))
	s := reducer.FromScratch(c.Local, state.Options{}, c.Objects())
	kinds := map[string]int{}
	for i := 0; i < 300; i++ {
		ev := c.Churn(i)
		kinds[ev.Kind]++
		next := reducer.Reduce(s, ev.Action)
		speaker, _, _ := effects.Group(effects.Diff(s, next))
		if len(speaker) != 1 || speaker[0].Address() != ev.Addr {
			t.Fatalf("event %d (%s %s): effects %v", i, ev.Kind, ev.Addr, speaker)
		}
		s = next
	}
	if len(kinds) != 3 {
		t.Errorf("churn kinds: %v", kinds)
	}
}

// TestApplyMatchesChurn: the from-scratch State of the applied lists has
// the neighbors of the incrementally reduced one.
func TestApplyMatchesChurn(t *testing.T) {
	c := Generate(testConfig(5))
	s := reducer.FromScratch(c.Local, state.Options{}, c.Objects())
	for i := 0; i < 30; i++ {
		ev := c.Churn(i)
		s = reducer.Reduce(s, ev.Action)
		c.Apply(ev.Action)
	}
	want := reducer.FromScratch(c.Local, state.Options{}, c.Objects())
	if !reflect.DeepEqual(s.Dump().Neighbors, want.Dump().Neighbors) {
		t.Error("applied lists derive other neighbors than the churned State")
	}
}

// TestWriteDirReadsBack: the watch file source reads the manifests into
// the generated objects.
func TestWriteDirReadsBack(t *testing.T) {
	c := Generate(testConfig(6))
	dir := t.TempDir()
	if err := c.WriteDir(dir, state.DefaultNamespace); err != nil {
		t.Fatal(err)
	}
	got, probs := watch.LoadDir(dir)
	if len(probs) > 0 {
		t.Fatalf("problems: %v", probs)
	}
	want := c.Objects()
	for _, k := range []struct {
		name      string
		got, want any
	}{{"nodes", got.Nodes, want.Nodes}, {"configs", got.Configs, want.Configs},
		{"filters", got.Filters, want.Filters}, {"secrets", got.Secrets, want.Secrets}, {"peers", got.Peers, want.Peers}} {
		if !reflect.DeepEqual(k.got, k.want) {
			t.Errorf("%s differ:\n got %+v\nwant %+v", k.name, k.got, k.want)
		}
	}
}
