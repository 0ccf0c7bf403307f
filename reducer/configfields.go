package reducer

import (
	"fmt"
	"strings"

	"github.com/peeragent/peeragent/state"
)

// notAppliedConfig checks bindMode and names the fields of the pinned
// BGPConfiguration that this agent reads and does not apply, each in a
// problem of its own
// (docs/semantics.md §7: nothing is silently ignored). None of them makes
// the object invalid: applying the rest does what Calico does apart from
// what the problem says.
func notAppliedConfig(c *state.BGPConfiguration, note func(string), bad func(string, ...any)) {
	switch c.BindMode {
	case "", "None", "NodeIP": // NodeIP: the server's ListenAddresses (reducer/context.go)
	default:
		bad("bindMode %q is not None or NodeIP", c.BindMode)
	}
	if len(c.IgnoredInterfaces) > 0 {
		note(fmt.Sprintf("ignoredInterfaces (%s) is not applied: this agent learns no interface routes, "+
			"so there is nothing to exclude", strings.Join(c.IgnoredInterfaces, ", ")))
	}
	for _, f := range []struct{ name, v string }{
		{"localWorkloadPeeringIPV4", c.LocalWorkloadPeeringIPV4},
		{"localWorkloadPeeringIPV6", c.LocalWorkloadPeeringIPV6},
	} {
		if f.v != "" {
			note(fmt.Sprintf("%s (%s) is not applied: this agent does not peer with local workloads "+
				"(a BGPPeer's localWorkloadSelector is unsupported)", f.name, f.v))
		}
	}
}

// neighborShape is the part of a configuration that can shape a neighbor
// or the server: configChanged re-derives them only when it changes. The
// fields cleared here shape neither (reducer/configfields_test.go guards
// the list): the log level (docs/semantics.md §1), the communities
// (docs/routes.md §8.5), the service ranges (§8.4), and the fields that
// are not applied. (bindMode shapes the server's listen addresses.)
func neighborShape(c state.BGPConfiguration) state.BGPConfiguration {
	c.LogSeverityScreen = ""
	c.Communities, c.PrefixAdvertisements = nil, nil
	c.ServiceClusterIPs, c.ServiceExternalIPs, c.ServiceLoadBalancerIPs = nil, nil, nil
	c.ServiceLoadBalancerAggregation = ""
	c.IgnoredInterfaces = nil
	c.LocalWorkloadPeeringIPV4, c.LocalWorkloadPeeringIPV6 = "", ""
	return c
}
