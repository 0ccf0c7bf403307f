// Package linux is the Linux dataplane executor: it installs the route
// table's entries (docs/routes.md §9.7) in the kernel's main table through
// rtnetlink (github.com/vishvananda/netlink). It is the only code in the
// project that changes kernel routes.
//
// Contract:
//   - Ownership: a route is this agent's when it is in the main table
//     with protocol Protocol (default 201) and metric Metric (default
//     1024). ListOwn dumps only those; Replace and Delete only ever act on
//     that key.
//   - Replace is RTM_NEWROUTE with NLM_F_CREATE|NLM_F_REPLACE: a drop route
//     is type RTN_BLACKHOLE, one next hop is RTA_GATEWAY, more are
//     RTA_MULTIPATH. Drop↔via and next-hop changes are that one call.
//   - Never a route it does not own (docs/routes.md §9.7 rule 2): the
//     kernel's replace would overwrite another protocol's route with the
//     same (prefix, table, metric), so Replace first looks for one and, if
//     found, fails naming its protocol, without a call.
//   - Next hops must be on-link: the kernel resolves each gateway to its
//     interface, and a gateway it cannot reach directly is a failed route
//     (decision C6).
//   - One socket: New(nil) keeps one rtnetlink socket, made in the
//     namespace of the thread that calls New, for every call (netlink's
//     package functions open, bind and close one per call: twice the CPU
//     of a route call, BenchmarkReplaceHandle); each call has netlink's
//     socket timeout, and one that times out or fails leaves the socket
//     usable (answers are matched by sequence number). A handle passed to
//     New is used as it is.
//   - Idempotent: replacing with the same route changes nothing; deleting
//     an absent route succeeds (ESRCH is recognised in absent() only).
//   - Errors are wrapped once, with the route:
//     "replace route 10.244.2.0/26 via 10.0.0.9: network is unreachable".
//   - Execute reports one TableRouteApplied or TableRouteApplyFailed per
//     (prefix, generation) of the route-replace and route-remove effects,
//     the neighbors' reachableBy routes included (docs/routes.md §9.7
//     rule 3).
//   - A change the kernel refuses with EPERM or EACCES (the agent lacks
//     CAP_NET_ADMIN in this network namespace) means no route can be
//     installed: Execute then also reports the problem of source "linux"
//     (state.DataplaneSources), cleared by the next change the kernel
//     accepts; /readyz is false meanwhile (docs/routes.md §9.7 rule 7).
package linux
