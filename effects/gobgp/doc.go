// Package gobgp is the executor of speaker effects on an embedded GoBGP
// (github.com/osrg/gobgp/v4, pkg/server) server. It is the only code in
// peeragent that talks to GoBGP.
//
// Contract:
//   - Execute carries out StartServer, RestartServer, StopServer, SetPolicy,
//     AddPeer, UpdatePeer, DeletePeer and DeletePolicy, in the order given,
//     and reports what happened as Actions: for each neighbor address and
//     generation exactly one state.PeerApplied or state.PeerApplyFailed
//     (a neighbor's remaining effects stop at its first error; the other
//     neighbors go on), and for each server effect one state.ServerApplied
//     or state.ServerApplyFailed. AddPath, DeletePath, SetAdd, SetDel and
//     ResetOut run in the order given (a run of AddPaths is one GoBGP call,
//     up to 1,024 paths); each AddPath and DeletePath reports
//     one state.PathApplied or state.PathApplyFailed for its prefix and
//     generation (docs/routes.md §10), a set or reset-out failure is only
//     logged. Route and secret-watch effects are not the speaker's and are
//     ignored.
//   - StartServer never races another BGP speaker for its port (calico-node's
//     BIRD, calico-vpp-agent's GoBGP): before binding it connects to the
//     port at its listen addresses (all addresses: loopback and the router
//     ID), and a listener answering there, or the bind refused with
//     EADDRINUSE, is one ServerApplyFailed naming the other speaker and how
//     to hand BGP over, with OtherSpeaker set (the agent stays healthy, not
//     ready); the start is retried like any server failure.
//   - Everything is idempotent: deleting what is absent succeeds, adding an
//     existing peer updates it, and applying the same effects again makes
//     no call that changes the speaker (GoBGP's UpdatePeer of an identical
//     config does not touch the session; an unchanged policy is not
//     re-installed). GoBGP's error strings are recognised in kindOf only.
//   - Errors are wrapped once, here, with the neighbor's identity
//     ("add peer 10.0.0.2 (AS 64513): ..."), and never hold a password: the
//     mapping in peerFor is the only place a password is revealed (CallsFor
//     hands its requests to the benchmarks' floor), and every error and
//     GoBGP log line is scrubbed of the passwords in use.
//   - The executor is the embedded speaker's only writer, so it keeps
//     records instead of asking GoBGP: the peers it configured (with their
//     route-reflector settings, AS and whether they have a password) and
//     the policies it installed, both cleared
//     whenever the speaker starts or stops, so the calls a neighbor costs
//     are those a plain loop would make (no ListPeer before an update or a
//     delete).
//   - A GoBGP v4 BgpServer serves once, so each start makes a new one; a
//     stop can be graceful (Options.GracefulShutdown, for Close): no
//     NOTIFICATION to graceful-restart peers, which keep our routes.
//   - Calico's export statements are one shared global export policy for
//     every neighbor outside the neighbor set peeragent-custom-neighbors;
//     they reference the shared per-family prefix sets (paths.go). All of
//     these are created at every start (the sets empty), changed in place,
//     never deleted while the speaker runs (docs/routes.md §8.3 rule 12).
//     A neighbor whose policy has rules of its own (a BGPFilter's import or
//     export rules, a next-hop mode) gets its own objects the first time:
//     two neighbor sets, prefix sets and import/export statements named
//     after its address, appended to two shared filter policies, Calico's
//     statements at the end of its export statements; it
//     is a member of that set while they exist. They are kept until its
//     policy is deleted: a filter is attached and detached by switching
//     the set that guards the rules' statements between the neighbor's
//     address and one no neighbor has, and one of the same shape replaces
//     another by rewriting the prefix sets in place (never Replace=true on
//     a set in use); only a change of shape rebuilds them. A neighbor with
//     no Calico export (a zero policy) is a member with nothing of its own.
//     The executor records the objects, the filter's state and the set's
//     members too (policyops.go: planPolicy decides the calls, and
//     PolicyBook hands the same calls to the benchmarks' floor), and orders
//     a rebuild so that no configured neighbor is ever without Calico's
//     statements. See policy.go for the mapping of Calico's
//     operators and why the policies are assigned to GoBGP's global table.
//   - The communities of re-exported routes (docs/routes.md §8.3 rule 3)
//     are statements of their own, one per community value and family, in
//     the policy peeragent-export-communities, assigned first on export and
//     applying to every neighbor: "inside the value's prefix set, without
//     the value: add it". The executor makes a statement with its set's
//     first member (a set-add of a peeragent-comm- set) and removes it
//     with the last (communities.go), so a change of communities is set
//     calls and a soft reset out, never a neighbor's objects.
//   - Watch (watch.go) is one GoBGP WatchEvent per server with the peer,
//     best-path and End-of-RIB callbacks, so sessions and learned paths
//     come as one stream in GoBGP's order; WatchSessions and WatchLearned
//     are its two halves. It follows the speaker across restarts and
//     generations without losing an event: attached when a server starts,
//     re-based in place (a snapshot of its own sets, the End-of-RIBs held)
//     when the running server gets a new generation, ended when it stops
//     (each session not idle reported idle, "speaker stopped"). Peer events
//     become state.SessionStateChanged
//     with the lower-case state name, the down reason (the executor's own
//     for a reset it caused, else the one v4's event carries), and the
//     time; best paths become state.BestPathsChanged with each prefix's
//     whole equal-best set (learned.go). A session that ran on
//     graceful-restart state GoBGP kept from an earlier one is followed,
//     when it ends, by the neighbor configured anew (grstate.go,
//     docs/routes.md §9.5 rule 3).
//   - The neighbors configured with a StartServer whose Preserved lists
//     every graceful-restart family they carry are added restarting
//     (restart.go, docs/routes.md §9.6 rule 7).
//   - GoBGP's logs go through slog (Options.Logger, from
//     Options.GoBGPLevel up, SetGoBGPLevel to change it), scrubbed of
//     passwords by scrubHandler.
//
// Which neighbor settings GoBGP applies in place and which reset the
// session is measured by TestMeasureUpdateResets and written up in
// docs/gobgp-updates.md; effects/classify.go holds the result.
package gobgp
