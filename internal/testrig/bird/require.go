package bird

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/peeragent/peeragent/internal/testrig/daemon"
)

// sbinDirs are searched after PATH: Debian installs bird and birdc in
// /usr/sbin, which a non-root PATH often lacks.
var sbinDirs = []string{"/usr/sbin", "/usr/local/sbin", "/sbin"}

type binaries struct {
	bird, birdc, version string
}

// lookup finds bird and birdc once per process and checks that bird is
// BIRD 2.
var lookup = sync.OnceValues(find)

// dependency is BIRD 2, for Require.
var dependency = daemon.Dependency{What: "peer", Tests: "BIRD interop tests"}

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
	return binaries{bird: bird, birdc: birdc, version: v}, nil
}

// Version is the version of the installed BIRD (for example "2.0.12"), or
// why BIRD 2 cannot be used.
func Version() (string, error) {
	b, err := lookup()
	return b.version, err
}

// Require makes the test depend on a usable BIRD 2: when bird or birdc is
// missing, it skips the test with a loud reason (also printed once on
// stderr, as go test shows skip reasons only with -v), except when the
// environment has CI=true, where it fails the test instead.
func Require(t testing.TB) {
	t.Helper()
	if _, err := lookup(); err != nil {
		dependency.Missing(t, fmt.Sprintf("!!! BIRD 2 NOT AVAILABLE: %v. Install Debian's bird2 (make deps, as root).", err))
	}
}

// FreePort is a TCP port on addr that was free a moment ago: the kernel
// picks it, and it is released before returning, so another process could
// take it in between (unlikely within one test run).
func FreePort(t testing.TB, addr netip.Addr) int {
	t.Helper()
	return daemon.MustFreePort(t, "birdtest", addr)
}
