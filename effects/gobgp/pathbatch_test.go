package gobgp

import (
	"context"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// TestBatchedAddPathsEqualOneByOne: a run of add-path effects goes to the
// speaker in one AddPath call (the shortcut); the results and the RIB must
// be those of the same effects carried out one Execute each (the plain
// way, one call per path): a path the executor cannot build fails alone,
// the paths around it are added, deletes and set changes between runs keep
// their order, and with the speaker stopped every path fails.
func TestBatchedAddPathsEqualOneByOne(t *testing.T) {
	requireLoopback(t, "127.0.0.61", "127.0.0.62")
	v4 := func(i int) netip.Prefix { return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(i), 0}), 26) }
	nh4, nh6 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("fd00::1")
	var effs []effects.Effect
	gen := uint64(0)
	add := func(p *state.Path) {
		gen++
		effs = append(effs, effects.AddPath{Path: p, Gen: gen})
	}
	for i := range 40 {
		add(&state.Path{Prefix: v4(i), NextHop: nh4, Communities: []string{fmt.Sprintf("65000:%d", i%3)}})
	}
	add(&state.Path{Prefix: v4(40), NextHop: nh6})
	add(&state.Path{Prefix: v4(41), NextHop: nh4, Communities: []string{"bad"}}) // cannot be built
	add(&state.Path{Prefix: netip.MustParsePrefix("fd10::/64"), NextHop: nh6})
	add(&state.Path{Prefix: v4(42), NextHop: nh4, Communities: []string{"1:2:3"}})
	effs = append(effs, effects.SetAdd{Member: state.SetMember{Set: state.SetOwn + "v4", Prefix: v4(3), Min: 26, Max: 32}})
	gen++
	effs = append(effs, effects.DeletePath{Prefix: v4(3), Gen: gen})
	add(&state.Path{Prefix: v4(3), NextHop: netip.MustParseAddr("10.0.0.9")}) // back, another next hop
	add(&state.Path{Prefix: v4(5), NextHop: netip.MustParseAddr("10.0.0.9")}) // replaced in the same run
	gen++
	effs = append(effs, effects.DeletePath{Prefix: v4(7), Gen: gen})

	run := func(addr string, oneByOne bool) ([]state.Action, []string) {
		sp := newSpeaker(t, addr)
		var out []state.Action
		if oneByOne {
			for _, eff := range effs {
				out = append(out, sp.Execute(context.Background(), []effects.Effect{eff})...)
			}
		} else {
			out = sp.Execute(context.Background(), effs)
		}
		before := slices.Clone(out)
		mustApply(t, sp.Executor, effects.StartServer{Server: sp.server(64512)})
		if oneByOne {
			for _, eff := range effs {
				out = append(out, sp.Execute(context.Background(), []effects.Effect{eff})...)
			}
		} else {
			out = append(out, sp.Execute(context.Background(), effs)...)
		}
		if len(before) == 0 {
			t.Fatalf("%s: no results with the speaker stopped", addr)
		}
		rib := append(ribPaths(t, sp, bgp.RF_IPv4_UC), ribPaths(t, sp, bgp.RF_IPv6_UC)...)
		return withoutTimes(out), rib
	}
	plainRes, plainRIB := run("127.0.0.61", true)
	batchRes, batchRIB := run("127.0.0.62", false)
	if !reflect.DeepEqual(batchRes, plainRes) {
		t.Errorf("results differ:\nbatched   %v\none by one %v", batchRes, plainRes)
	}
	if !slices.Equal(batchRIB, plainRIB) {
		t.Errorf("RIB differs:\nbatched   %v\none by one %v", batchRIB, plainRIB)
	}
	if len(plainRIB) != 42 { // 43 added, 7 deleted
		t.Errorf("RIB holds %d paths, want 42: %v", len(plainRIB), plainRIB)
	}
	failed := 0
	for _, a := range plainRes {
		if _, ok := a.(state.PathApplyFailed); ok {
			failed++
		}
	}
	// Stopped: every add and delete; started: the unbuildable one.
	if want := len(plainRes)/2 + 1; failed != want {
		t.Errorf("%d failures, want %d: %v", failed, want, plainRes)
	}
}
