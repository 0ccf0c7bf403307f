// Package effects turns the difference between two consecutive States into
// the ordered list of calls that make the world match the second one.
//
// Contract:
//   - Effects are plain values with a stable one-line String(), used by the
//     golden files and by `peeragent plan`; they hold no closures.
//   - Diff(prev, next) is pure and deterministic. Its cost is proportional
//     to what changed between prev and next: it walks the persistent maps
//     of both States and skips every subtree they share.
//   - Nothing touching BGP or VPP is emitted before every source has
//     synced; from then on the first Diff configures everything at once.
//   - Per address, effects come in dependency order: a neighbor's policy
//     before the peer that uses it, the peer's deletion before its policy's.
//   - Own paths and shared prefix sets (docs/routes.md §10): set additions
//     and add-paths before the neighbors, delete-paths, set removals and
//     reset-outs after them; on a (re)started speaker every path goes in
//     before the first neighbor.
//   - The last effect of a step is an Alarm when the State's earliest
//     deadline (state.State.Deadline) changed: the agent's one timer, which
//     rings as a Tick (docs/design.md "Time").
//   - The executors live in sub-packages (effects/gobgp, effects/vpp,
//     effects/linux); this package imports neither GoBGP, govpp nor
//     netlink. It holds the Dataplane interface the route executors share,
//     NoDataplane (the executor of --dataplane none: every route skipped),
//     and Runner, the one optional interface of an executor that reports
//     facts back (Run(ctx, dispatch): effects/vpp's link), which
//     cmd/peeragent's supervisor starts and restarts as a part of its own.
package effects
