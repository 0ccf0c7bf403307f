package gobgp

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// TestPathResultsAreActions: each add-path and delete-path reports its
// outcome for its prefix and generation (docs/routes.md §10); a set change
// reports none. With no speaker running every call fails.
func TestPathResultsAreActions(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	p := netip.MustParsePrefix("10.244.1.0/26")
	got := e.Execute(context.Background(), []effects.Effect{
		effects.SetAdd{Member: state.SetMember{Set: "peeragent-own-v4", Prefix: p, Min: 26, Max: 32}},
		effects.AddPath{Path: &state.Path{Prefix: p, NextHop: netip.MustParseAddr("10.0.0.1")}, Gen: 4},
		effects.DeletePath{Prefix: p, Gen: 5},
	})
	if len(got) != 2 {
		t.Fatalf("got %d actions, want 2: %v", len(got), got)
	}
	for i, gen := range []uint64{4, 5} {
		f, ok := got[i].(state.PathApplyFailed)
		if !ok || f.Prefix != p || f.Gen != gen || !strings.Contains(f.Error, p.String()) {
			t.Errorf("action %d = %#v, want PathApplyFailed for %s gen %d naming the prefix", i, got[i], p, gen)
		}
	}
}
