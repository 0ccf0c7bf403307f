package linux

import (
	"encoding/json"
	"net/netip"
	"os/exec"
	"testing"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/dataplane"
	"github.com/peeragent/peeragent/internal/testrig/netns"
	"github.com/peeragent/peeragent/state"
)

// TestConformance: the Linux executor runs the dataplane conformance
// suite in a network namespace of the test's own (a veth with
// 10.0.0.1/24 and fd00::1/64), the table read back with iproute2's ip;
// the kernel refuses a next hop that is not on-link.
func TestConformance(t *testing.T) {
	dataplane.Run(t, func(t *testing.T) dataplane.Target {
		a, _ := netns.Pair(t, netip.MustParsePrefix("10.0.0.1/24"), netip.MustParsePrefix("10.0.0.2/24"))
		ipIn(t, a.NS, "addr", "add", "fd00::1/64", "dev", a.Dev, "nodad")
		h, err := netns.Handle(a.NS)
		if err != nil {
			t.Fatalf("netlink handle in %s: %v", a.NS, err)
		}
		t.Cleanup(h.Close)
		return dataplane.Target{
			Name: "linux", Exec: New(h, Options{}),
			Caps: dataplane.Capabilities{Table: true, OffLink: dataplane.OffLinkRefused},
			Held: func(t *testing.T) []state.Route { return ipRoutes(t, a.NS) },
			Forget: func(t *testing.T, p netip.Prefix) {
				ipIn(t, a.NS, "route", "del", p.String(), "table", "main", "proto", "201", "metric", "1024")
			},
			Again: func(*testing.T) effects.Executor { return New(h, Options{}) },
		}
	})
}

func ipIn(t *testing.T, ns string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip -n %s %v: %v\n%s", ns, args, err, out)
	}
	return out
}

// ipRoutes is what ip lists in the main table under protocol 201 and
// metric 1024, the default ownership key.
func ipRoutes(t *testing.T, ns string) []state.Route {
	t.Helper()
	type hop struct {
		Gateway string `json:"gateway"`
	}
	var out []state.Route
	for _, family := range []string{"-4", "-6"} {
		var listed []struct {
			Type     string `json:"type"`
			Dst      string `json:"dst"`
			Gateway  string `json:"gateway"`
			Metric   int    `json:"metric"`
			Nexthops []hop  `json:"nexthops"`
		}
		if err := json.Unmarshal(ipIn(t, ns, "-j", family, "route", "show", "table", "main", "proto", "201"), &listed); err != nil {
			t.Fatalf("ip route show: %v", err)
		}
		for _, l := range listed {
			if l.Metric != DefaultMetric {
				continue
			}
			r := state.Route{Prefix: netip.MustParsePrefix(l.Dst), Drop: l.Type == "blackhole"}
			for _, g := range append([]hop{{l.Gateway}}, l.Nexthops...) {
				if g.Gateway != "" {
					r.Via = append(r.Via, netip.MustParseAddr(g.Gateway))
				}
			}
			out = append(out, state.NormalRoute(r))
		}
	}
	return out
}
