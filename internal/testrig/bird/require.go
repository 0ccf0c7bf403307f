package bird

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/internal/testrig/daemon"
)

// sbinDirs are searched after PATH: Debian installs bird and birdc in
// /usr/sbin, which a non-root PATH often lacks.
var sbinDirs = []string{"/usr/sbin", "/usr/local/sbin", "/sbin"}

type binaries struct {
	bird, birdc string
}

// find finds bird and birdc and checks that bird is BIRD 2.
func find() (binaries, error) {
	bird, err := daemon.LookPath(sbinDirs, "bird")
	if err != nil {
		return binaries{}, err
	}
	birdc, err := daemon.LookPath(sbinDirs, "birdc", "birdcl")
	if err != nil {
		return binaries{}, err
	}
	// bird --version prints "BIRD version 2.0.12" on stderr.
	out, err := exec.Command(bird, "--version").CombinedOutput()
	v := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "BIRD version"))
	if err != nil || !strings.HasPrefix(v, "2.") {
		return binaries{}, fmt.Errorf("%s --version said %q (err %v): BIRD 2 is needed", bird, out, err)
	}
	return binaries{bird: bird, birdc: birdc}, nil
}

// programs are bird and birdc, found once per process, for Require.
var programs = &daemon.Programs[binaries]{Find: find, Dependency: daemon.Dependency{What: "peer", Tests: "BIRD interop tests"},
	NotAvailable: "!!! BIRD 2 NOT AVAILABLE: %v. Install Debian's bird2 (make deps, as root)."}

// Require makes the test depend on a usable BIRD 2: when bird or birdc is
// missing, it skips the test with a loud reason (also printed once on
// stderr, as go test shows skip reasons only with -v), except when the
// environment has CI=true, where it fails the test instead.
func Require(t testing.TB) {
	t.Helper()
	programs.Require(t)
}

// FreePort is a TCP port on addr that was free a moment ago: the kernel
// picks it, and it is released before returning, so another process could
// take it in between (unlikely within one test run).
func FreePort(t testing.TB, addr netip.Addr) int {
	t.Helper()
	return daemon.MustFreePort(t, "birdtest", addr)
}
