// Package vpp carries out the dataplane effects in VPP through govpp's
// binary API: the reachableBy host route (/32 or /128) of a neighbor via
// its gateway (ip_route_add_del, the API source), and the route table's
// entries (docs/routes.md §9.7) in a FIB source of our own. It is the only
// code in the project that talks to VPP.
//
// Route table contract (the Dataplane methods Replace, Delete, ListOwn):
//   - At connect the executor finds the FIB source "peeragent" with
//     fib_source_dump (VPP keeps a source across our restarts) or adds it
//     with fib_source_add, priority 0x82: weaker than API (0x80) and CLI,
//     so a route the CNI adds through the API wins on the same prefix. A
//     VPP without these messages or ip_route_add_del_v2 still gets the
//     reachableBy routes; the table's routes then fail.
//   - Replace is ip_route_add_del_v2{is_add=1, is_multipath=0} in table 0
//     with our source: it replaces the source's paths of the prefix in one
//     call. A drop route is one FIB_API_PATH_TYPE_DROP path; next hops are
//     normal paths with sw_if_index ~0, resolved recursively by the FIB.
//   - Delete is is_add=0 with our source and no paths: only our entry
//     goes; NO_SUCH_ENTRY is success.
//   - ListOwn is ip_route_v2_dump{src, table 0} per family.
//   - Execute reports one TableRouteApplied or TableRouteApplyFailed per
//     (prefix, generation) of route-replace and route-remove, after the
//     reachableBy results; disabled, they are skipped.
//
// reachableBy contract:
//   - Execute reports exactly one RouteApplied or RouteApplyFailed per
//     (neighbor address, generation) found among the AddRoute and
//     DeleteRoute effects it is given, in the order they first appear. A
//     reachableBy change gives one generation two effects (delete the old
//     route, add the new one): both are tried, and the single result is a
//     failure naming every route that failed. Other effects are ignored.
//   - With no VPP (Disabled, or New with a nil connection) nothing is sent
//     and every route is reported as RouteApplied{Skipped: true}, so the
//     State records it as skipped rather than losing it.
//   - The message is ip_route_add_del in table 0 with is_multipath=0 and
//     one path via the gateway (sw_if_index ~0: VPP resolves the gateway
//     through the FIB), weight 1, the proto of the gateway's family.
//   - Idempotent: is_multipath=0 makes an add replace the entry's paths, so
//     adding an existing route changes nothing; deleting an absent route
//     succeeds (VPP's NO_SUCH_ENTRY is recognised in absent() only).
//   - Errors are wrapped once, with the route:
//     "add route 10.0.0.9/32 via 192.168.1.1: VPP retval -6 (No such entry)".
//   - Every VPP call is bounded (callTimeout, and the caller's context):
//     govpp waits for a reply forever by default.
//   - Connect dials the VPP API socket with a bounded attempt and fails
//     with an error naming the socket; it also checks that this VPP speaks
//     the ip_route_add_del version compiled in, so a mismatch is found at
//     start rather than at the first route.
package vpp
