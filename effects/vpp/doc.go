// Package vpp carries out the dataplane effects of a neighbor: the
// reachableBy host route (/32 or /128) to the neighbor via its gateway,
// added and removed with VPP's ip_route_add_del through govpp's binary API.
// It is the only code in the project that talks to VPP.
//
// Contract:
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
