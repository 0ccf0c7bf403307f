package gobgp

import (
	"net/netip"
	"slices"
	"testing"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// TestSharedExportFollowsCustomSet: three embedded speakers, a in the
// middle. b originates 10.99.0.0/24 (in no pool: Calico's export
// statements reject it once learned); a originates 10.244.1.0/26 (own:
// accepted). What a exports to c shows which export applies to c:
//   - c with a standard policy while the custom neighbor set is empty (as
//     GoBGP creates it at start): the shared policy, so the own path only;
//   - c with its policy deleted (in the set, added later in place): GoBGP's
//     default, both routes;
//   - c standard again while another neighbor (b) is a member: the shared
//     policy's INVERT match, the own path only;
//   - c with export rules of its own (a member, with its own export policy
//     ending in Calico's statements): its rule accepts 10.99.0.0/24;
//   - c standard again: its filter detached in place, it keeps its objects
//     and its membership, and its own Calico statements decide;
//   - c's policy deleted: its objects go, GoBGP's default again.
func TestSharedExportFollowsCustomSet(t *testing.T) {
	s := startThree(t)
	a, b, c, ab, ac := s.a, s.b, s.c, s.ab, s.ac
	standard := state.Policy{CalicoExport: true}
	ab.Policy, ac.Policy = standard, standard
	own := &state.Path{Prefix: netip.MustParsePrefix("10.244.1.0/26"), NextHop: netip.MustParseAddr(a.addr)}
	mustPaths(t, a.Executor, effects.AddPath{Path: own})
	s.peer(t, standard)
	originate(t, b, "10.99.0.0/24")
	waitRIB(t, a, "10.244.1.0/26", "10.99.0.0/24")
	if n := members(t, a); len(n) != 0 {
		t.Fatalf("custom neighbors %v, want none", n)
	}
	waitRIB(t, c, "10.244.1.0/26")
	wantAdjOut(t, a, c, "10.244.1.0/26")

	mustApply(t, a.Executor, effects.DeletePolicy{Addr: ac.Address, Gen: 2})
	waitRIB(t, c, "10.244.1.0/26", "10.99.0.0/24")
	if n := members(t, a); len(n) != 1 || n[0] != "127.0.0.3/32" {
		t.Fatalf("custom neighbors %v, want c's", n)
	}

	mustApply(t, a.Executor, effects.DeletePolicy{Addr: ab.Address, Gen: 2},
		effects.SetPolicy{Addr: ac.Address, Policy: standard, Gen: 3})
	if n := members(t, a); len(n) != 1 || n[0] != "127.0.0.2/32" {
		t.Fatalf("custom neighbors %v, want b's", n)
	}
	waitRIB(t, c, "10.244.1.0/26")
	wantAdjOut(t, a, c, "10.244.1.0/26")

	rules := standard
	rules.Export = []state.Rule{{Filter: "f", Action: "accept", Operator: "Equal", Prefix: netip.MustParsePrefix("10.99.0.0/24")}}
	mustApply(t, a.Executor, effects.SetPolicy{Addr: ac.Address, Policy: rules, Gen: 4})
	waitRIB(t, c, "10.244.1.0/26", "10.99.0.0/24")
	if n := members(t, a); len(n) != 2 {
		t.Fatalf("custom neighbors %v, want b's and c's", n)
	}
	// And back: c keeps its objects (a member still), with its filter
	// detached: its own Calico statements decide, as the shared ones would.
	mustApply(t, a.Executor, effects.SetPolicy{Addr: ac.Address, Policy: standard, Gen: 5})
	waitRIB(t, c, "10.244.1.0/26")
	if n := members(t, a); len(n) != 2 {
		t.Fatalf("custom neighbors %v, want b's and c's", n)
	}
	if f := filterSet(t, a, ac.Address); len(f) != 1 || f[0] != "0.0.0.0/32" {
		t.Fatalf("c's filter set %v, want [0.0.0.0/32] (detached)", f)
	}
	// Its policy deleted, c's objects go; GoBGP's default applies to it.
	mustApply(t, a.Executor, effects.DeletePolicy{Addr: ac.Address, Gen: 6})
	waitRIB(t, c, "10.244.1.0/26", "10.99.0.0/24")
	if left := objectsNamed(t, a, baseName(ac.Address)); len(left) > 0 {
		t.Fatalf("c's objects left after its policy was deleted: %v", left)
	}
}

// filterSet lists the filter set of the neighbor at n on a speaker.
func filterSet(t *testing.T, sp *speaker, n netip.Addr) []string {
	t.Helper()
	var out []string
	err := sp.Speaker().ListDefinedSet(t.Context(), &api.ListDefinedSetRequest{
		DefinedType: api.DefinedType_DEFINED_TYPE_NEIGHBOR, Name: baseName(n) + "-filter",
	}, func(d *api.DefinedSet) { out = append(out, d.List...) })
	if err != nil {
		t.Fatalf("ListDefinedSet: %v", err)
	}
	return out
}

// members lists the custom neighbor set of a speaker.
func members(t *testing.T, sp *speaker) []string {
	t.Helper()
	var out []string
	err := sp.Speaker().ListDefinedSet(t.Context(), &api.ListDefinedSetRequest{
		DefinedType: api.DefinedType_DEFINED_TYPE_NEIGHBOR, Name: customNeighbors,
	}, func(d *api.DefinedSet) { out = append(out, d.List...) })
	if err != nil {
		t.Fatalf("ListDefinedSet: %v", err)
	}
	return out
}

// wantAdjOut checks what sp's export policies let out to the neighbor to
// now (GoBGP runs them when it lists adj-out without the filtered paths).
func wantAdjOut(t *testing.T, sp, to *speaker, want ...string) {
	t.Helper()
	var got []string
	err := sp.Speaker().ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_ADJ_OUT, Name: to.addr, Family: bgp.RF_IPv4_UC},
		func(prefix bgp.NLRI, _ []*apiutil.Path) { got = append(got, prefix.String()) })
	if err != nil {
		t.Fatalf("ListPath: %v", err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("adj-out of %s to %s: want %v, have %v", sp.addr, to.addr, want, got)
	}
}
