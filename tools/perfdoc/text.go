package main

// method is how the benchmarks measure (e2e/bench*_test.go).
const method = `Everything runs in one process per ` + "`go test`" + ` invocation: the real agent loop of
agent/ (Loop: Dispatch, Reduce, Diff, effects on their own goroutine, results fed back)
over the real GoBGP executor (effects/gobgp), on an embedded GoBGP v4.8.0 listening on
127.0.0.1 at a free port. A wrapping Executor timestamps every Execute. The session watch is
not running; no neighbor establishes (their addresses are unreachable), as "configured" means
that AddPeer returned.

**Clusters** come from internal/testrig/clustergen, seeded, fed as one SourceSynced per kind:

- *mesh=1000*: 1,000 nodes in the node-to-node mesh, no BGPPeer: 999 neighbors.
- *peers=10000*: 10,000 BGPPeers, each its own neighbor of the local node (20% global, 30%
  selecting it by label, the rest naming it; 9% with a password Secret of their own; 10% with
  one of 4 BGPFilters, which the executor installs as a per-neighbor GoBGP policy), 100 nodes
  in the mesh, and a route-reflector BGPPeer selecting nodes by label: 10,099 neighbors. Why
  9%: Linux keeps a listening socket's TCP-MD5 keys in its option memory
  (net.core.optmem_max, 128 KiB here), which holds about 960 of them; past that GoBGP logs
  "failed to set md5" and cannot accept those neighbors' sessions (a limit to know of in
  production: raise optmem_max beyond about 900 MD5 neighbors per node).

**Convergence** is the time from the first Dispatch to the return of the Execute that confirmed
the last neighbor. The **floor** is a fresh GoBGP server fed by a plain loop: StartBgp, then for
each neighbor the AddDefinedSet and AddPolicy of its policy (its statements appended to the shared
filter policies) and AddPeer, in
the agent's order, with the exact requests the executor builds (gobgp.CallsFor, computed before
the clock starts); timed from StartBgp to the last AddPeer's return. One server runs at a time
(GoBGP's StartBgp sets package state): for the mesh the agent and the floor take turns going
first; for 10,000 BGPPeers the floor goes first, as the agent's speaker stays up for the churn.
Wall and process CPU time are both reported: the machine is shared, and CPU time is less
sensitive to that. The result table takes the median over the runs.

**Churn** runs on the agent left converged with the 10,099 neighbors. The targets are about
*in-place* changes: a BGPFilter attached to or detached from a BGPPeer (a SetPolicy or
DeletePolicy, which GoBGP applies by a soft reset; on GoBGP v4 every neighbor setting resets
the session, docs/gobgp-updates.md); each changes exactly one neighbor. *light*: 200 changes
at 50/s, for the latency without queueing. *steady*: 2,500 changes offered at 5,000/s on
schedule; events/s is their number over the time from the first Dispatch to the last call's
return; latency runs from Dispatch to the return of the Execute that made the event's call. A
change waits while the previous change to its neighbor awaits its call (the loop would
rightly coalesce them, leaving nothing to time). *flood*: changes as fast as the agent takes
them, at most 250 awaiting their call. *reset*: then 1,000 resetting changes flooded the same
way, at their own rate: a peer's password Secret rotated (a session-resetting UpdatePeer) and
a remote node's label flipped (moving it between the mesh and the route-reflector BGPPeer: a
DeletePeer and an AddPeer). *floor*: the same in-place changes' GoBGP requests (derived ahead by the pure core and the
executor's own planner, gobgp.PolicyBook: a filter attached or detached is a switch of the
neighbor's filter set, its prefix sets rewritten in place, then a soft reset; a neighbor's first
filter makes its objects) by a plain loop on the floor server, holding the same 10,099
neighbors: it replays the agent's events in order, light, steady and flood, from the state the
agent started from, and its figures are those of the flood's events (the same indices, the same
state as the agent's flood). *old way*: per change, the object lists
with the change → reducer.FromScratch → effects.Diff against the previous State in full → the
effects that change something executed (no sleep, unlike the design it replaces; two States
derived from scratch number their generations afresh, and the UpdatePeers of no change that
this causes for every later neighbor are left out). *instant*:
the same churn and old way over an executor that confirms every effect at once: the agent's
own cost.

**Memory**: *heap-B/neighbor* of peers=10000 is the live heap (after GC) of the agent and its
embedded speaker, converged and settled, minus the live heap before, per neighbor (GoBGP v4
allocates about 200 KiB per neighbor and family: see the releases side by side below). *state* is the live heap (after GC) holding a converged State of the 10,099-neighbor
cluster, every neighbor confirmed, minus the live heap before the cluster existed, per neighbor.
*churn=100000* runs the loop over the instant executor (GoBGP's heap is not the agent's), fills
its journal with 2,000 changes, then compares the live heap before and after 100,000 more.

**Learned routes** (effects/linux BenchmarkLearnedInstall, as root; docs/routes.md §9.2, §9.7):
n learned /32s from one peer into the kernel, each run in a fresh network namespace with a dummy
interface. The *floor* is a bare loop of netlink RouteReplace of the same n routes (protocol 201,
metric 1024, one on-link next hop). The *agent* is Reduce of one BestPathsChanged listing the n
prefixes, effects.Diff, and the Linux executor's calls (effects.ApplyRoutes, what Execute runs),
timed from the event to the last call's return; *core-s* is its Reduce and Diff alone. *results-s*
is the reduction of the n results afterwards, as the agent loop makes it (one step,
reducer.ReduceRouteResults), until the State has every route applied; it is reported apart, and
*ratio-with-results* adds it. *cpu-ratio* compares the process's CPU time (user and system, the Go
runtime's threads included) over the two. *heap-B/route* is the live heap (after GC) gained over
the event and its results, per route: the State and the executor's record of the routes it owns.
*BenchmarkBestPathChange* (reducer) moves one prefix's best path with 10,000 learned prefixes
installed: Reduce, Diff and the call on an instant dataplane, per change.

**Scrapes** (e2e BenchmarkScrape; docs/semantics.md §7): the loop over the GoBGP
executor (--dataplane none) peers with a second GoBGP on 127.0.0.2 that originates 100,000 /32s;
once the State has them all, GET /metrics through the metrics handler, 20 times. ns/op is the
wall time of one; *cpu-ms/scrape* the process's CPU time over them, per scrape (the speaker's
goroutines included).

**Heap per learned route** (e2e BenchmarkLearnedHeap; docs/routes.md §9.9): the agent
of BenchmarkScrape learns 100,000 /32s; the live heap it gained, less the peer's own (measured
alone), per route is *total-B/route*; *agent-B/route* is the State's share (the Reduce of the
same best paths, measured alone), *speaker-B/route* the rest (GoBGP's Adj-RIB-In and RIB, the
executor's best-set copy); *peer-B/route* is the test peer's, not the agent's.

**Reducer** benchmarks are the core's own (Reduce and Diff of one change, and from scratch), up
to 10,000 peers; the 100,000-peer size takes minutes and is left to a manual run.

**Hot paths without O(neighbors) calls.** A neighbor deleted or updated, a BGPFilter attached
or detached, an own path added or deleted: the executor makes no GoBGP call whose cost grows
with the number of neighbors where v4.8.0 offers one that does not. What each replaced:

| hot path | call that was O(neighbors) | replaced by |
|---|---|---|
| DeletePeer | ` + "`" + `ListPeer` + "`" + ` by address (currentPeer), for the peer's AS and password: GoBGP compares every neighbor's address (2.3 ms at 10,000) | the executor's record of the peers it configured keeps their AS and whether they have a password (effects/gobgp/peerops.go) |
| UpdatePeer | the same ` + "`" + `ListPeer` + "`" + ` when the record lacked the peer or had other route-reflector settings | the record alone (it is exact: the executor is the speaker's only writer); a peer not in it is added |
| SetPolicy (a BGPFilter attached, detached, re-attached with other CIDRs) | ` + "`" + `DeletePolicy` + "`" + ` (builds every neighbor's ID, G ` + "`" + `pkg/server/server.go` + "`" + ` L4318, then scans every statement), ` + "`" + `DeleteDefinedSet` + "`" + ` whole (scans every policy's statements), ` + "`" + `Add` + "`" + `/` + "`" + `DeletePolicyAssignment` + "`" + ` (O(assigned policies)), leaving the custom neighbor set (` + "`" + `NeighborSet.Remove` + "`" + `, O(members), G ` + "`" + `internal/pkg/table/policy.go` + "`" + ` L647) | in place: the neighbor's objects are made once and kept, its filter set switched between its address and the unspecified one (two edits of a one-entry set), its prefix sets rewritten in place, then the soft reset (docs/routes.md §8.3 rule 12) |
| AddPath, DeletePath | none of the executor's (the record of configured peers answers ResetOut) | one Execute's own IPv4 paths share their attribute list; a run of add-paths is one AddPath call (up to 1,024 paths: one trip through GoBGP's management loop, not one a path) |

What stays O(neighbors) is GoBGP's own, only where v4.8.0 has no other call: a BGPFilter of another
shape and the removal of a neighbor that has policy objects of its own (` + "`" + `DeletePolicy` + "`" + `, whole-set
` + "`" + `DeleteDefinedSet` + "`" + `, each statement's ` + "`" + `DeleteStatement` + "`" + `, leaving the custom set); every call also
waits its turn on GoBGP's event loop. A neighbor's first BGPFilter appends its statements to the
shared filter policies (` + "`" + `AddPolicy` + "`" + ` of an existing policy: O(its statements)) instead of assigning
policies of its own (` + "`" + `AddPolicyAssignment` + "`" + `, O(assigned policies), G ` + "`" + `internal/pkg/table/policy.go` + "`" + `
L4581-4619).
`

// profileIntro explains the profile table.
const profileIntro = `make bench profiles the 10,000-BGPPeer run (` + "`-cpuprofile bench-tenk.prof`" + `; the
floor's convergence and churn, then the agent's convergence, churn and old way). Samples are
labelled with their run (pprof labels, which the loop's and GoBGP's goroutines inherit: agent,
floor, old) and split by who spent them: the agent's own code (core, executor, loop, with the
allocation and GC assist it causes), GoBGP, or the Go runtime (scheduler, GC background). The
runs do not do the same work (the agent's churn is longer than the floor's): compare the
splits, not the totals. ` + "`go tool pprof -tagfocus run=agent bench-tenk.prof`" + ` shows the
agent's run alone.
`
