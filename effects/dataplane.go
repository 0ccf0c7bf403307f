package effects

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/peeragent/peeragent/state"
)

// ReplaceRoute installs the route table entry Route (docs/routes.md §9.7):
// Linux RTM_NEWROUTE with NLM_F_CREATE|NLM_F_REPLACE, VPP
// ip_route_add_del_v2 with is_add=1, is_multipath=0 in its own FIB source.
// One call adds a route or changes it (drop↔via, other next hops), never a
// delete then an add. Idempotent.
type ReplaceRoute struct {
	Route state.Route
	Gen   uint64
}

// RemoveRoute removes this agent's route table entry for Prefix: Linux
// RTM_DELROUTE of the owned key, VPP ip_route_add_del_v2 with is_add=0 in
// its own source. Idempotent: an absent route is success.
type RemoveRoute struct {
	Prefix netip.Prefix
	Gen    uint64
}

func (e ReplaceRoute) String() string {
	return fmt.Sprintf("route-replace %s gen=%d", e.Route, e.Gen)
}

func (e RemoveRoute) String() string {
	return fmt.Sprintf("route-remove %s gen=%d", e.Prefix, e.Gen)
}

// RescanRoutes lists the dataplane's own routes again, as the rescan Seq
// (docs/routes.md §9.7 rule 6); its result is a RoutesRescanned.
type RescanRoutes struct {
	Seq uint64
}

func (e RescanRoutes) String() string    { return fmt.Sprintf("route-rescan seq=%d", e.Seq) }
func (RescanRoutes) Address() netip.Addr { return netip.Addr{} }
func (RescanRoutes) Ref() Ref            { return Ref{Kind: KindRescanRoutes} }

func (ReplaceRoute) Address() netip.Addr { return netip.Addr{} }
func (RemoveRoute) Address() netip.Addr  { return netip.Addr{} }
func (e ReplaceRoute) Ref() Ref          { return Ref{Kind: KindReplaceRoute, Gen: e.Gen} }
func (e RemoveRoute) Ref() Ref           { return Ref{Kind: KindRemoveRoute, Gen: e.Gen} }

// Dataplane is one forwarding plane's route table, as far as this agent
// owns it (docs/routes.md §9.7): routes with its protocol number in the
// kernel's main table (effects/linux), or in its FIB source (effects/vpp).
// Implementations are the executors; they never touch a route they do not
// own, and their errors already name the route, wrapped once.
type Dataplane interface {
	// Name is the --dataplane value: "linux" or "vpp".
	Name() string
	// Replace adds r or changes the owned route of r.Prefix into r, in one
	// call. Idempotent.
	Replace(ctx context.Context, r state.Route) error
	// Delete removes the owned route of p. Idempotent: absent is success.
	Delete(ctx context.Context, p netip.Prefix) error
	// ListOwn lists every owned route, for adoption at start
	// (docs/routes.md §9.6).
	ListOwn(ctx context.Context) ([]state.Route, error)
}

type routeKey struct {
	prefix netip.Prefix
	gen    uint64
}

func (k routeKey) less(o routeKey) bool {
	if c := k.prefix.Compare(o.prefix); c != 0 {
		return c < 0
	}
	return k.gen < o.gen
}

// ApplyRoutes carries out the ReplaceRoute and RemoveRoute effects of effs
// on dp, in order, and returns one TableRouteApplied or
// TableRouteApplyFailed (stamped with the time) per (prefix, generation),
// in the order they first appear, then one RoutesRescanned per RescanRoutes (listed at its place
// among the calls); other effects are ignored. A failure never stops the
// other routes. A nil dp (--dataplane none) applies nothing and reports
// every route as skipped.
func ApplyRoutes(ctx context.Context, dp Dataplane, effs []Effect) []state.Action {
	var order []routeKey
	var rescans []state.Action
	var failures [][]string // per entry of order
	// at finds a key's entry once the keys stop coming in increasing
	// order (Diff emits them in prefix order, so it is rarely needed).
	var at map[routeKey]int
	for _, e := range effs {
		var k routeKey
		var err error
		switch e := e.(type) {
		case RescanRoutes:
			l := ListRoutes(ctx, dp)
			rescans = append(rescans, state.RoutesRescanned{Seq: e.Seq, Dataplane: l.Dataplane, Routes: l.Routes, Error: l.Error})
			continue
		case ReplaceRoute:
			k = routeKey{e.Route.Prefix, e.Gen}
			if dp != nil {
				err = dp.Replace(ctx, state.NormalRoute(e.Route))
			}
		case RemoveRoute:
			k = routeKey{e.Prefix, e.Gen}
			if dp != nil {
				err = dp.Delete(ctx, e.Prefix.Masked())
			}
		default:
			continue
		}
		i := -1
		if n := len(order); at != nil || (n > 0 && !order[n-1].less(k)) {
			if at == nil {
				at = make(map[routeKey]int, len(order))
				for j, o := range order {
					at[o] = j
				}
			}
			if j, seen := at[k]; seen {
				i = j
			}
		}
		if i < 0 {
			i = len(order)
			order, failures = append(order, k), append(failures, nil)
			if at != nil {
				at[k] = i
			}
		}
		if err != nil {
			failures[i] = append(failures[i], err.Error())
		}
	}
	out := make([]state.Action, 0, len(order))
	now := time.Now()
	for i, k := range order {
		if errs := failures[i]; len(errs) > 0 {
			out = append(out, state.TableRouteApplyFailed{Prefix: k.prefix, Gen: k.gen, Error: strings.Join(errs, "; "), At: now})
			continue
		}
		out = append(out, state.TableRouteApplied{Prefix: k.prefix, Gen: k.gen, Skipped: dp == nil})
	}
	return append(out, rescans...)
}

// NoDataplane is the executor of --dataplane none: no table, so it
// installs nothing, reports every route as skipped and lists nothing, as
// "none" (ApplyRoutes and ListRoutes over no Dataplane). It passes the
// dataplane conformance suite (internal/testrig/dataplane) with a
// capability table that says so.
type NoDataplane struct{}

var _ Executor = NoDataplane{}

// Execute reports every route of effs as skipped, and each RescanRoutes
// as an empty listing.
func (NoDataplane) Execute(ctx context.Context, effs []Effect) []state.Action {
	return ApplyRoutes(ctx, nil, effs)
}

// ListRoutes is the start-up fact of docs/routes.md §9.6: dp's own routes,
// normal and sorted by prefix. With a nil dp (--dataplane none) nothing is
// owned: the list is empty, and named "none".
func ListRoutes(ctx context.Context, dp Dataplane) state.RoutesListed {
	if dp == nil {
		return state.RoutesListed{Dataplane: "none"}
	}
	routes, err := dp.ListOwn(ctx)
	if err != nil {
		return state.RoutesListed{Dataplane: dp.Name(), Error: err.Error()}
	}
	out := make([]state.Route, len(routes))
	for i, r := range routes {
		out[i] = state.NormalRoute(r)
	}
	slices.SortFunc(out, func(a, b state.Route) int { return comparePrefix(a.Prefix, b.Prefix) })
	return state.RoutesListed{Dataplane: dp.Name(), Routes: out}
}

// comparePrefix orders IPv4 before IPv6, then by address, then by length.
func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}
