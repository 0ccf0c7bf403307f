// Package reducer computes the next State: Reduce(state.State,
// state.Action) state.State, the only place the agent decides anything.
//
// Contract (docs/design.md, rules of taste 1–3):
//   - Reduce is pure and total: no context, clock, logger, error or I/O;
//     time and outside results arrive inside Actions. Bad input becomes a
//     Problem in the State, never an error or a panic. The State it is given
//     is never modified (the golden runner checks this on every step).
//   - Derivation is incremental: an input change marks the neighbor
//     addresses it can affect dirty, and only those are resolved again
//     (resolve.go is the single place a neighbor changes), so a step costs
//     what changed, not the size of the cluster. FromScratch computes the
//     same State from complete lists; property tests hold the two equal.
//   - A step marks what its action invalidates in four scopes, and
//     tx.finish (reduce.go) derives them again in this order, neighbors,
//     paths and routes each in sorted key order so that generations are
//     deterministic:
//     1. neighbors: the dirty addresses (every one after a change that
//     shapes them all, tx.full: this node appearing, or its addresses, AS
//     or cluster ID changing; the default or this node's BGPConfiguration
//     changing a neighbor setting; rederiveAll) are resolved again
//     (resolve.go), then the host routes of the neighbors that changed are
//     marked (neighborRoutes) and, when a TCP-MD5 key came or went, the
//     keys are checked against optmem_max (checkKeyMemory);
//     2. services: the service ranges and every service's host paths
//     (refreshServices, docs/routes.md §8.4), on tx.services or tx.full;
//     3. advertised paths: the own paths of the marked prefixes, or of
//     all (tx.allPaths: tx.full or changed community rules), derived again
//     (derivePaths, docs/routes.md §8.1), which marks their routes;
//     4. routes: the route table entries of the marked prefixes, or of all
//     when the paths were (routesDone, docs/routes.md §9.2), which then
//     checks whether the table went live and routing settled. The settle
//     check counts what settling waits for (settle.go): the State carries
//     the count with the neighbors, sessions and End-of-RIBs it was made
//     from, and a step counts again only the neighbors whose entries
//     differ (pmap.Diff), so a step costs what changed, not the number of
//     neighbors; tests hold it equal to the plain walk over every neighbor
//     and to a count made afresh (settle_test.go, the golden runner).
//     Last, retry records no longer waiting are dropped
//     (dropStaleRetries); the earliest deadline left (State.Deadline) is
//     what Diff turns into the alarm. A Tick first fires what is due
//     (tick, fireRetries), then finishes like an input. A result or fact
//     reported by an executor or the kernel (results.go, reduceResult)
//     updates what it names in place and runs only the routes scope and
//     the retry cleanup.
//   - Input kinds: each kind of input object is declared once in state
//     (state.InputKind: its key, its list, its actions) and once here (a
//     case of reduceInput, kinds.go: its upsert and delete, and the map
//     that holds it). Reduce finds an upsert's or a deletion's kind by its
//     type (state.InputOf), synced a complete list's by its Kind: what the
//     list names is upserted, what it does not is deleted. The calls are
//     static, so a step's tx stays on the stack.
//   - Which neighbors this node gets, with which settings and precedence,
//     is docs/semantics.md §2–§3; passwords §4; the session lifecycle is the
//     looplab/fsm table of §6 (Lifecycle, Mermaid), driven by the results
//     the executors report back, each carrying the generation it was
//     computed for so that stale results are dropped.
//   - Time is state (docs/design.md "Time"): the reducer keeps its
//     deadlines (the settle deadline, routing.settleAt; the next rescan,
//     routing.rescanAt; each failed call's retry, retries.go, with the
//     backoff of backoff.go) from the times the
//     facts carry and the At of the last Tick (State.Now); a Tick does what
//     is due at its time. State.Deadline is the earliest, which Diff turns
//     into the agent's alarm.
package reducer
