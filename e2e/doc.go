// Package e2e holds the slow tests of the whole agent, apart from the
// packages they exercise so that cmd/peeragent's own tests (its flags and
// subcommands) stay a fast loop: the cluster tests (the agent's Kubernetes
// source and loop against a real kube-apiserver, internal/testrig/kube),
// the end-to-end tests (agent processes built from ./cmd/peeragent, against
// each other, BIRD, FRR and the kernel, in network namespaces the tests
// create), the no-flap test (every input changed without cause, against
// BIRD and FRR, with no session reset) and the scale benchmarks that
// docs/performance.md is generated from (make bench).
//
// Contract: only test files, and this doc. A test that runs the agent as a
// process builds it once per test process (buildAgent); one that runs it
// in-process uses the library packages (agent, watch, effects/...), never
// package main. Network tests touch only 127.0.0.0/8, ::1 or namespaces
// they create, and clean up; every wait is bounded. Under -short the
// whole package is skipped (TestMain); a test skips where a daemon, root
// or the API server is missing (it fails instead under CI=true).
package e2e
