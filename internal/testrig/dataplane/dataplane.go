// Package dataplane is the conformance suite of the dataplane executors
// (docs/design.md "Adding a dataplane"): one scenario of route-table
// effects, run against each executor (effects/linux in a network
// namespace, effects/vpp over govpp's mock adapter, effects.NoDataplane
// for --dataplane none), which must give the same results and leave the
// same table.
//
// # Contract
//
//   - Run(t, newTarget) runs the scenario on the Target newTarget makes:
//     install (a route via a next hop, a drop route, an IPv6 route),
//     the same again (idempotent), a change of each kind in one call
//     (another next hop, drop to via, via to drop), ECMP, a next hop
//     that is not on-link, a next hop of the other family, a delete and
//     the delete of an absent route, one Execute with two generations of
//     a prefix and a rescan, a rescan, drift (an owned route removed
//     behind the executor's back: the rescan lists what is there, and a
//     replace installs it again) and adoption (a new executor over the same
//     table lists what the previous one left, and replaces and deletes it).
//   - Every step compares Execute's actions with what the step expects:
//     one TableRouteApplied or TableRouteApplyFailed per (prefix,
//     generation) in the order they first appear, then the
//     RoutesRescanned; a failure's error names its prefix; nothing else.
//     After every step the table as the dataplane holds it (Target.Held,
//     read apart from the executor) must be what the steps installed.
//   - Where executors legitimately differ, the Target's Capabilities say
//     so, and the suite expects that executor's outcome; no step is
//     skipped for one executor without a capability naming why.
package dataplane

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// Addresses a Target's dataplane must have: OnLink4, OnLink4b and OnLink6
// are next hops on a network the dataplane is connected to (10.0.0.0/24,
// fd00::/64); OffLink4 is on none.
var (
	OnLink4  = netip.MustParseAddr("10.0.0.2")
	OnLink4b = netip.MustParseAddr("10.0.0.3")
	OnLink6  = netip.MustParseAddr("fd00::2")
	OffLink4 = netip.MustParseAddr("192.0.2.1")
)

// OffLink is what a dataplane does with a next hop on no connected
// network.
type OffLink int

const (
	// OffLinkRefused: the route fails (the kernel resolves each gateway
	// to an interface: "network is unreachable"; docs/routes.md §9.7 rule
	// 3, decision C6).
	OffLinkRefused OffLink = iota
	// OffLinkResolved: the route is installed and the dataplane resolves
	// the next hop recursively (VPP's FIB, sw_if_index ~0).
	OffLinkResolved
)

// Capabilities are where a dataplane legitimately differs from the others.
type Capabilities struct {
	// Table: routes reach a table. False for --dataplane none: every
	// route is reported skipped, a rescan lists nothing, and there is no
	// drift or adoption to see.
	Table bool
	// OffLink: a next hop that is not on-link.
	OffLink OffLink
}

// Target is one executor under test and its dataplane.
type Target struct {
	// Name is the RoutesRescanned's Dataplane: the --dataplane value, or
	// "none".
	Name string
	Exec effects.Executor
	Caps Capabilities
	// Held is every route the dataplane holds as this agent's, read apart
	// from the executor (the kernel's own dump; the mock VPP's table of
	// the messages it decoded). Nil without a Table.
	Held func(t *testing.T) []state.Route
	// Forget removes the owned route of a prefix behind the executor's
	// back. Nil without a Table.
	Forget func(t *testing.T, p netip.Prefix)
	// Again is a new executor over the same dataplane, as the agent's
	// after a restart.
	Again func(t *testing.T) effects.Executor
}

// step is one Execute of the scenario.
type step struct {
	name   string
	before func(t *testing.T, tg *Target, m *model) // what happens first, outside the executor
	effs   []effects.Effect
	// invalid are the prefixes whose routes every dataplane with a table
	// refuses (the executors check them before any call).
	invalid []netip.Prefix
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func via(p string, hops ...netip.Addr) state.Route {
	return state.NormalRoute(state.Route{Prefix: pfx(p), Via: hops})
}

func drop(p string) state.Route { return state.Route{Prefix: pfx(p), Drop: true} }

func replace(r state.Route, gen uint64) effects.Effect {
	return effects.ReplaceRoute{Route: r, Gen: gen}
}

func remove(p string, gen uint64) effects.Effect {
	return effects.RemoveRoute{Prefix: pfx(p), Gen: gen}
}

var scenario = []step{
	{name: "install", effs: []effects.Effect{
		replace(via("10.10.0.0/24", OnLink4), 1), replace(drop("10.20.0.0/26"), 1), replace(via("fd00:10::/64", OnLink6), 1),
	}},
	{name: "install-again-is-a-no-op", effs: []effects.Effect{
		replace(via("10.10.0.0/24", OnLink4), 2), replace(drop("10.20.0.0/26"), 2), replace(via("fd00:10::/64", OnLink6), 2),
	}},
	{name: "change-in-one-call", effs: []effects.Effect{
		replace(via("10.10.0.0/24", OnLink4b), 3), replace(via("10.20.0.0/26", OnLink4), 3), replace(drop("fd00:10::/64"), 3),
	}},
	{name: "ecmp", effs: []effects.Effect{replace(via("10.30.0.0/24", OnLink4b, OnLink4), 1)}},
	{name: "ecmp-to-one-next-hop", effs: []effects.Effect{replace(via("10.30.0.0/24", OnLink4), 2)}},
	{name: "next-hop-not-on-link", effs: []effects.Effect{replace(via("10.40.0.0/24", OffLink4), 1)}},
	{name: "next-hop-of-the-other-family", effs: []effects.Effect{
		replace(state.Route{Prefix: pfx("10.50.0.0/24"), Via: []netip.Addr{OnLink6}}, 1),
		replace(via("10.60.0.0/24", OnLink4), 1),
	}, invalid: []netip.Prefix{pfx("10.50.0.0/24")}},
	{name: "delete-and-delete-absent", effs: []effects.Effect{remove("10.60.0.0/24", 2), remove("10.99.0.0/24", 1)}},
	{name: "two-generations-and-a-rescan", effs: []effects.Effect{
		effects.RescanRoutes{Seq: 1}, replace(via("10.70.0.0/24", OnLink4), 1), remove("10.70.0.0/24", 2), replace(drop("10.80.0.0/24"), 1),
	}},
	{name: "rescan", effs: []effects.Effect{effects.RescanRoutes{Seq: 2}}},
	{name: "drift-rescan-lists-what-is-there", before: func(t *testing.T, tg *Target, m *model) {
		if tg.Caps.Table {
			tg.Forget(t, pfx("10.10.0.0/24"))
			delete(m.table, pfx("10.10.0.0/24"))
		}
	}, effs: []effects.Effect{effects.RescanRoutes{Seq: 3}}},
	{name: "drift-replace-installs-again", effs: []effects.Effect{replace(via("10.10.0.0/24", OnLink4b), 4)}},
	{name: "adoption-lists-what-the-last-run-left", before: func(t *testing.T, tg *Target, _ *model) {
		tg.Exec = tg.Again(t)
	}, effs: []effects.Effect{effects.RescanRoutes{Seq: 4}}},
	{name: "adoption-replaces-and-deletes", effs: []effects.Effect{
		replace(via("10.10.0.0/24", OnLink4), 5), replace(via("fd00:10::/64", OnLink6), 4), remove("10.20.0.0/26", 4),
	}},
}

// Run runs the scenario against the Target newTarget makes.
func Run(t *testing.T, newTarget func(t *testing.T) Target) {
	t.Helper()
	tg := newTarget(t)
	if tg.Caps.Table && (tg.Held == nil || tg.Forget == nil) {
		t.Fatalf("%s has a table but no Held or Forget", tg.Name)
	}
	m := model{caps: tg.Caps, table: map[netip.Prefix]state.Route{}}
	for _, s := range scenario {
		ok := t.Run(s.name, func(t *testing.T) {
			if s.before != nil {
				s.before(t, &tg, &m)
			}
			want := m.apply(s, tg.Name)
			got := tg.Exec.Execute(context.Background(), s.effs)
			if diff := cmp.Diff(want, comparable(t, got)); diff != "" {
				t.Errorf("%s: results (-want +got):\n%s", tg.Name, diff)
			}
			if tg.Caps.Table {
				if diff := cmp.Diff(m.routes(), sorted(tg.Held(t))); diff != "" {
					t.Errorf("%s: the table holds (-want +got):\n%s", tg.Name, diff)
				}
			}
		})
		if !ok {
			return // later steps build on this one
		}
	}
}

// model is what the dataplane should hold after each step.
type model struct {
	caps  Capabilities
	table map[netip.Prefix]state.Route
}

// apply returns the results step s should give, and takes its changes.
func (m *model) apply(s step, name string) []string {
	var out, rescans []string
	for _, e := range s.effs {
		switch e := e.(type) {
		case effects.RescanRoutes:
			rescans = append(rescans, m.rescanned(e.Seq, name))
		case effects.ReplaceRoute:
			out = append(out, m.replace(e, slices.Contains(s.invalid, e.Route.Prefix)))
		case effects.RemoveRoute:
			if !m.caps.Table {
				out = append(out, fmt.Sprintf("skipped %s gen=%d", e.Prefix, e.Gen))
				continue
			}
			delete(m.table, e.Prefix)
			out = append(out, fmt.Sprintf("applied %s gen=%d", e.Prefix, e.Gen))
		}
	}
	return append(out, rescans...)
}

func (m *model) replace(e effects.ReplaceRoute, invalid bool) string {
	r := state.NormalRoute(e.Route)
	offLink := slices.Contains(r.Via, OffLink4)
	switch {
	case !m.caps.Table:
		return fmt.Sprintf("skipped %s gen=%d", r.Prefix, e.Gen)
	case invalid, offLink && m.caps.OffLink == OffLinkRefused:
		return fmt.Sprintf("failed %s gen=%d", r.Prefix, e.Gen)
	}
	m.table[r.Prefix] = r
	return fmt.Sprintf("applied %s gen=%d", r.Prefix, e.Gen)
}

func (m *model) rescanned(seq uint64, name string) string {
	var routes []string
	for _, r := range m.routes() {
		routes = append(routes, r.String())
	}
	return fmt.Sprintf("rescanned seq=%d %s [%s]", seq, name, strings.Join(routes, "; "))
}

func (m *model) routes() []state.Route {
	var out []state.Route
	for _, r := range m.table {
		out = append(out, r)
	}
	return sorted(out)
}

func sorted(rs []state.Route) []state.Route {
	out := make([]state.Route, len(rs))
	for i, r := range rs {
		out[i] = state.NormalRoute(r)
	}
	slices.SortFunc(out, func(a, b state.Route) int {
		if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
			return c
		}
		return a.Prefix.Bits() - b.Prefix.Bits()
	})
	return out
}

// comparable is Execute's actions in the suite's words: a failure's error
// must name its prefix (and is otherwise the executor's own).
func comparable(t *testing.T, acts []state.Action) []string {
	t.Helper()
	var out []string
	for _, a := range acts {
		switch a := a.(type) {
		case state.TableRouteApplied:
			word := "applied"
			if a.Skipped {
				word = "skipped"
			}
			out = append(out, fmt.Sprintf("%s %s gen=%d", word, a.Prefix, a.Gen))
		case state.TableRouteApplyFailed:
			if !strings.Contains(a.Error, a.Prefix.String()) || a.At.IsZero() {
				t.Errorf("failure of %s gen=%d: %q at %v, want an error naming the prefix, and its time", a.Prefix, a.Gen, a.Error, a.At)
			}
			out = append(out, fmt.Sprintf("failed %s gen=%d", a.Prefix, a.Gen))
		case state.RoutesRescanned:
			var routes []string
			for _, r := range a.Routes {
				routes = append(routes, r.String())
			}
			line := fmt.Sprintf("rescanned seq=%d %s [%s]", a.Seq, a.Dataplane, strings.Join(routes, "; "))
			if a.Error != "" {
				line += " error: " + a.Error
			}
			out = append(out, line)
		default:
			out = append(out, fmt.Sprintf("unexpected %T %+v", a, a))
		}
	}
	return out
}
