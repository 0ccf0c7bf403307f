package state

import (
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Route is one entry of the dataplane route table (docs/routes.md §9.7):
// Prefix goes to Drop, or via the next hops Via (more than one: ECMP). The
// executors install and list routes in this form; NormalRoute gives the
// canonical one.
type Route struct {
	Prefix netip.Prefix `json:"prefix"`
	Drop   bool         `json:"drop,omitempty"`
	Via    []netip.Addr `json:"via,omitempty"`
}

// NormalRoute masks the prefix's host bits and sorts and de-duplicates
// the next hops (IPv4-mapped ones unmapped), so that equal routes compare
// and print equal whatever order a speaker or a kernel listed them in.
// A drop route keeps no next hops.
func NormalRoute(r Route) Route {
	out := Route{Prefix: r.Prefix.Masked(), Drop: r.Drop}
	if r.Drop || len(r.Via) == 0 {
		return out
	}
	if normalVia(r.Via) {
		out.Via = r.Via // already normal: shared, as a Route is never modified
		return out
	}
	out.Via = make([]netip.Addr, len(r.Via))
	for i, a := range r.Via {
		out.Via[i] = a.Unmap()
	}
	slices.SortFunc(out.Via, func(a, b netip.Addr) int { return a.Compare(b) })
	out.Via = slices.Compact(out.Via)
	return out
}

// normalVia: unmapped, sorted, no next hop twice.
func normalVia(via []netip.Addr) bool {
	for i, a := range via {
		if a.Is4In6() || (i > 0 && via[i-1].Compare(a) >= 0) {
			return false
		}
	}
	return true
}

// Equal reports whether two normal routes are the same entry.
func (r Route) Equal(o Route) bool {
	return r.Prefix == o.Prefix && r.Drop == o.Drop && slices.Equal(r.Via, o.Via)
}

// String is the route in one line: "10.244.1.0/26 drop",
// "10.244.2.0/26 via 10.0.0.2,10.0.0.3".
func (r Route) String() string {
	if r.Drop {
		return r.Prefix.String() + " drop"
	}
	hops := make([]string, len(r.Via))
	for i, a := range r.Via {
		hops[i] = a.String()
	}
	return r.Prefix.String() + " via " + strings.Join(hops, ",")
}

// RoutesListed: the dataplane executor (linux or vpp) listed the routes it
// owns (protocol 201, or its FIB source), once at start, before applying
// anything. They become the held set that desired routes adopt and that is
// swept once settled (docs/routes.md §9.6). Routes are normal and sorted
// by prefix; Error is set, and Routes empty, when the listing failed.
type RoutesListed struct {
	Dataplane string    `json:"dataplane"`
	Routes    []Route   `json:"routes,omitempty"`
	Error     string    `json:"error,omitempty"`
	At        time.Time `json:"at,omitzero"`
}

// TableRouteApplied: the dataplane executor replaced or removed the route
// table entry for Prefix of generation Gen (docs/routes.md §9.7), or, with
// no dataplane (--dataplane none), skipped it.
type TableRouteApplied struct {
	Prefix  netip.Prefix `json:"prefix"`
	Gen     uint64       `json:"gen"`
	Skipped bool         `json:"skipped,omitempty"`
}

// TableRouteApplyFailed: the dataplane executor failed the route table
// entry for Prefix of generation Gen: the kernel or VPP refused it, or
// another protocol owns the prefix (docs/routes.md §9.7 rules 2 and 3),
// at At (the start of its retry's backoff). Error is wrapped once, with
// the route.
type TableRouteApplyFailed struct {
	Prefix netip.Prefix `json:"prefix"`
	Gen    uint64       `json:"gen"`
	Error  string       `json:"error"`
	At     time.Time    `json:"at,omitzero"`
}

// RoutesRescanned: the dataplane executor listed the routes it owns again,
// for the rescan Seq (docs/routes.md §9.7 rule 6). Routes are normal and
// sorted by prefix; Error is set, and Routes empty, when the listing
// failed. Dataplane "none" lists nothing and is not compared.
type RoutesRescanned struct {
	Seq       uint64  `json:"seq"`
	Dataplane string  `json:"dataplane"`
	Routes    []Route `json:"routes,omitempty"`
	Error     string  `json:"error,omitempty"`
}

func (RoutesListed) ActionName() string          { return "routesListed" }
func (RoutesRescanned) ActionName() string       { return "routesRescanned" }
func (TableRouteApplied) ActionName() string     { return "tableRouteApplied" }
func (TableRouteApplyFailed) ActionName() string { return "tableRouteApplyFailed" }

// DataplaneSources are the InputProblems sources under which a dataplane
// executor reports, by its --dataplane name, that it cannot install any
// route: "vpp" while not connected to VPP, "linux" while the kernel
// refuses this agent's route changes (no CAP_NET_ADMIN in the network
// namespace). Each clears its problem once it can install routes again.
var DataplaneSources = []string{"linux", "vpp"}

// DataplaneDown lists the problems of the dataplane executor that say it
// cannot install routes at all (DataplaneSources): the agent is not ready
// while there is one (docs/routes.md §9.7 rule 7).
func (s State) DataplaneDown() []Problem {
	var out []Problem
	for _, src := range DataplaneSources {
		if ps, ok := s.Inputs.InputProblems.Get(src); ok {
			out = append(out, ps...)
		}
	}
	return out
}
