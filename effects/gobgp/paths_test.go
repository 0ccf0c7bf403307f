package gobgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// mustPaths carries out path effects and fails the test on any error
// (Execute only logs them).
func mustPaths(t *testing.T, e *Executor, effs ...effects.Effect) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, eff := range effs {
		if err := e.applyPath(ctx, eff, nil); err != nil {
			t.Fatalf("%s: %v", eff, err)
		}
	}
}

// ribPaths lists a speaker's global RIB of a family as "PREFIX nh=A
// communities=C" lines, sorted.
func ribPaths(t *testing.T, sp *speaker, fam bgp.Family) []string {
	t.Helper()
	var out []string
	err := sp.Speaker().ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_GLOBAL, Family: fam},
		func(prefix bgp.NLRI, paths []*apiutil.Path) {
			for _, p := range paths {
				out = append(out, prefix.String()+" "+describeAttrs(p.Attrs))
			}
		})
	if err != nil {
		t.Fatalf("ListPath: %v", err)
	}
	slices.Sort(out)
	return out
}

func describeAttrs(attrs []bgp.PathAttributeInterface) string {
	var nh string
	var comms []string
	for _, a := range attrs {
		switch a := a.(type) {
		case *bgp.PathAttributeNextHop:
			nh = a.Value.String()
		case *bgp.PathAttributeMpReachNLRI:
			nh = a.Nexthop.String()
		case *bgp.PathAttributeCommunities:
			for _, v := range a.Value {
				comms = append(comms, fmt.Sprintf("%d:%d", v>>16, v&0xffff))
			}
		case *bgp.PathAttributeLargeCommunities:
			for _, v := range a.Values {
				comms = append(comms, fmt.Sprintf("%d:%d:%d", v.ASN, v.LocalData1, v.LocalData2))
			}
		}
	}
	return "nh=" + nh + " communities=" + strings.Join(comms, ",")
}

func waitPaths(t *testing.T, sp *speaker, want ...string) {
	t.Helper()
	slices.Sort(want)
	if !pollUntil(establishTimeout, func() bool { return slices.Equal(ribPaths(t, sp, bgp.RF_IPv4_UC), want) }) {
		t.Fatalf("RIB of %s: want %v, have %v", sp.addr, want, ribPaths(t, sp, bgp.RF_IPv4_UC))
	}
}

// TestPairAdvertisesOwnPaths: an own path with its next hop and standard
// and large communities reaches the peer through the Calico export
// statements (docs/routes.md §8.2, §8.3 rule 4); adding it and its set
// member again changes nothing; an attribute change is one AddPath; the
// peer's own paths still reach us through its Calico statements; DeletePath
// withdraws, twice is success; none of it touches the session.
func TestPairAdvertisesOwnPaths(t *testing.T) {
	p := newPair(t)
	p.na.Policy = state.Policy{CalicoExport: true}
	p.nb.Policy = state.Policy{CalicoExport: true}
	own := &state.Path{Prefix: netip.MustParsePrefix("10.244.1.0/26"), NextHop: netip.MustParseAddr(p.a.addr),
		Communities: []string{"65000:100", "65000:0:7"}}
	block := state.SetMember{Set: "peeragent-own-v4", Prefix: own.Prefix, Min: 26, Max: 32}
	pools := state.SetMember{Set: "peeragent-pools-v4", Prefix: netip.MustParsePrefix("10.244.0.0/16"), Min: 16, Max: 32}
	p.start(t, effects.SetAdd{Member: block}, effects.SetAdd{Member: pools}, effects.AddPath{Path: own},
		effects.SetPolicy{Addr: p.na.Address, Policy: p.na.Policy, Gen: 1}, effects.AddPeer{Neighbor: p.na, Gen: 1})
	mustApply(t, p.b.Executor, effects.SetPolicy{Addr: p.nb.Address, Policy: p.nb.Policy, Gen: 2})
	waitPaths(t, p.b, "10.244.1.0/26 nh=127.0.0.1 communities=65000:100,65000:0:7")

	ma, mb := p.a.events.mark(), p.b.events.mark()
	mustPaths(t, p.a.Executor, effects.SetAdd{Member: block}, effects.AddPath{Path: own})
	changed := *own
	changed.Communities = []string{"65000:200"}
	mustPaths(t, p.a.Executor, effects.AddPath{Path: &changed})
	waitPaths(t, p.b, "10.244.1.0/26 nh=127.0.0.1 communities=65000:200")

	// b's Calico statements accept its own paths, in a pool or not.
	originate(t, p.b, "10.99.0.0/24", "10.244.9.0/24")
	waitRIB(t, p.a, "10.244.1.0/26", "10.244.9.0/24", "10.99.0.0/24")

	mustPaths(t, p.a.Executor, effects.DeletePath{Prefix: own.Prefix}, effects.DeletePath{Prefix: own.Prefix},
		effects.SetDel{Member: block}, effects.SetDel{Member: block})
	waitRIB(t, p.b, "10.244.9.0/24", "10.99.0.0/24")
	p.quiet(t, "path and set changes", ma, mb)
}

// TestPathForIPv6: an IPv6 own path carries its next hop in MP_REACH_NLRI
// (docs/routes.md §8.2 rule 1).
func TestPathForIPv6(t *testing.T) {
	p, err := pathFor(&state.Path{Prefix: netip.MustParsePrefix("fd00:244::/122"), NextHop: netip.MustParseAddr("fd00::1"),
		Communities: []string{"1:2:3"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Family != bgp.RF_IPv6_UC {
		t.Errorf("family %v", p.Family)
	}
	if got := describeAttrs(p.Attrs); got != "nh=fd00::1 communities=1:2:3" {
		t.Errorf("attributes: %s", got)
	}
}
