// Package buildinfo says which build of peeragent is running: its version,
// the VCS revision and time it was built from, and the Go toolchain. It is
// read once from the binary (runtime/debug.ReadBuildInfo) and from the
// version variable that release builds set with
//
//	go build -ldflags "-X github.com/peeragent/peeragent/internal/buildinfo.version=v0.1.0"
//
// (make build and make image do). `peeragent version` prints it, and the
// metrics code exports it as the peeragent_build_info gauge (Labels).
//
// It imports only the standard library, so every package may use it.
package buildinfo
