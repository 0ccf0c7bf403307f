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
