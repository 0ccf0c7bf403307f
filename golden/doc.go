// Package golden pins the reducer's behaviour with scenario files.
//
// Each golden/testdata/<area>-<case>.txtar holds a prose comment saying
// what the scenario proves, an optional initial.yaml (node name, agent
// options, and setup actions whose effects are not recorded), actions.yaml
// (the actions in order, one single-key map each, in the journal form of
// state.DecodeAction), and the generated want-effects.txt (per step a
// "# N action" header and that step's effects, or "(none)") and
// want-state.yaml (the final State, as the /state dump shows it, but for the
// neighbor settings at their defaults, which it leaves out: StateYAML).
//
// `go test ./golden -update` rewrites only the want-* sections; review every
// update in the diff. The runner also checks, for every step, that Reduce
// left the previous State unchanged, that a second run gives identical
// output, and that no password text from the actions appears in the output.
package golden
