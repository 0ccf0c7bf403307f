// Package state holds peeragent's State, the Actions that change it, and the
// value types both are made of.
//
// Contract:
//   - Everything here is plain data. A State is immutable once built: the
//     reducer returns a new State that shares structure with the old one
//     (the big collections are persistent maps from state/pmap), so a
//     step copies O(log n), not O(n).
//   - Actions are facts, already converted from Kubernetes or daemon types
//     into the small value types of this package; this package imports no
//     client-go, Calico, GoBGP or govpp code.
//   - Each kind of input object is declared once (InputKind,
//     inputkinds.go: its Kind, the key of an object, its list in a
//     SourceSynced, its upsert and deletion); InputKinds lists them all.
//   - Passwords are of type Password, which redacts itself in every
//     formatter, JSON and YAML; only Reveal (for the executor that hands it
//     to the kernel) returns the text.
//   - The serialised form (Dump) is deterministic: sorted keys, so the state
//     endpoint and golden files are byte-for-byte reproducible.
package state
