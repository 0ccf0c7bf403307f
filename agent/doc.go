// Package agent is the runtime as a library: the loop that owns the State
// (mailbox, batching, Reduce, Diff, publish), the effects runner, the
// alarm (the executor of effects.Alarm: one timer that dispatches
// state.Tick when the State's earliest deadline comes), the action journal, the metrics, the HTTP handlers and their client (Fetch). It is a library so
// that cmd/peeragent stays flags, wiring and subcommands, and so that tests
// and other mains can run the same loop. It talks to daemons only through
// the effects.Executor interface: it never imports an executor.
package agent
