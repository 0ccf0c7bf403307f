// Package vpp carries out the route table's entries (docs/routes.md §9.7)
// in VPP through govpp's binary API, in a FIB source of our own: the own
// blocks' drop routes, the learned routes and the neighbors' reachableBy
// host routes (docs/semantics.md §3). It is the only code in the project
// that talks to VPP.
//
// Contract (the Dataplane methods Replace, Delete, ListOwn, and Execute):
//   - Two constructors for its two modes: Dial (the agent's: a socket
//     path; the executor's Run, an effects.Runner, connects and keeps the
//     connection) and Attach (a connection the caller owns and keeps, such
//     as govpp's mock adapter's in tests). --dataplane none is not this
//     package's: effects.NoDataplane.
//   - At each connection of its link the executor checks that VPP speaks
//     the FIB source messages and ip_route_add_del_v2 as compiled in (same
//     CRCs; a VPP without them is refused with an error naming them), then
//     finds the FIB source "peeragent" with fib_source_dump (VPP keeps a
//     source across our restarts) or adds it with fib_source_add, priority
//     0x82: weaker than API (0x80) and CLI, so a route the CNI adds
//     through the API wins on the same prefix. Attach finds or adds the
//     source on the caller's connection the same way.
//   - Replace is ip_route_add_del_v2{is_add=1, is_multipath=0} in table 0
//     with our source: it replaces the source's paths of the prefix in one
//     call. A drop route is one FIB_API_PATH_TYPE_DROP path; next hops are
//     normal paths with sw_if_index ~0, weight 1, resolved recursively by
//     the FIB.
//   - Delete is is_add=0 with our source and no paths: only our entry
//     goes; NO_SUCH_ENTRY is success (recognised in absent() only).
//   - ListOwn is ip_route_v2_dump{src, table 0} per family.
//   - Execute reports one TableRouteApplied or TableRouteApplyFailed per
//     (prefix, generation) of route-replace and route-remove, and a
//     RoutesRescanned per route-rescan; other effects are ignored. While a
//     Dial-made executor is not connected every route fails ("not
//     connected to VPP") and is retried. The dataplane conformance suite
//     (internal/testrig/dataplane, TestConformance) runs it over a mock VPP
//     that keeps a FIB and checks every message.
//   - Errors are wrapped once, with the route:
//     "replace route 10.0.0.9/32 via 192.168.1.1: VPP retval -6 (No such entry)".
//   - Every VPP call is bounded (callTimeout, and the caller's context):
//     govpp waits for a reply forever by default.
//   - Dial keeps the connection across VPP restarts (link.go): a problem
//     while VPP is away; once it is back, the source is registered again
//     and then every route VPP had accepted is sent again, a failure being
//     a TableRouteApplyFailed of the route's generation.
package vpp
