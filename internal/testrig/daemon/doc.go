// Package daemon is what the real-daemon test harnesses (bird,
// frr, kube) share: running a program in the foreground of a test
// with its output captured (Start, Process, LogBuffer), stopping it with
// SIGTERM then SIGKILL, waiting for it to answer within a deadline
// (Process.WaitReady) or for what it says to hold (Poll), finding its
// binaries once per process (Programs, LookPath, Executable), skipping a
// test loudly when they are missing, or failing it under CI=true
// (Dependency, Programs.Require; RequireBind for the loopback addresses a
// test binds), and the files and ports it needs (WriteFileAtomic,
// SocketDir, FreePort).
//
// It holds no daemon-specific knowledge: each harness keeps its own
// messages, timeouts and configuration, and passes them in.
package daemon
