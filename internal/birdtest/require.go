package birdtest

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// sbinDirs are searched after PATH: Debian installs bird and birdc in
// /usr/sbin, which a non-root PATH often lacks.
var sbinDirs = []string{"/usr/sbin", "/usr/local/sbin", "/sbin"}

type binaries struct {
	bird, birdc, version string
}

var (
	lookupOnce sync.Once
	lookupBins binaries
	lookupErr  error
	loudOnce   sync.Once
)

// lookup finds bird and birdc once per process and checks that bird is
// BIRD 2.
func lookup() (binaries, error) {
	lookupOnce.Do(func() { lookupBins, lookupErr = find() })
	return lookupBins, lookupErr
}

func find() (binaries, error) {
	bird, err := findBinary("bird")
	if err != nil {
		return binaries{}, err
	}
	birdc, err := findBinary("birdc", "birdcl")
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

func findBinary(names ...string) (string, error) {
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		for _, dir := range sbinDirs {
			p := filepath.Join(dir, name)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%s not found in PATH or %s", strings.Join(names, " or "), strings.Join(sbinDirs, ", "))
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
	_, err := lookup()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("!!! BIRD 2 NOT AVAILABLE: %v. Install Debian's bird2 (make deps, as root).", err)
	if inCI() {
		t.Fatalf("%s Under CI=true a missing peer is a failure, not a skip.", msg)
	}
	loudOnce.Do(func() { fmt.Fprintf(os.Stderr, "%s BIRD interop tests are SKIPPED.\n", msg) })
	t.Skipf("%s SKIPPED.", msg)
}

func inCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

// FreePort is a TCP port on addr that was free a moment ago: the kernel
// picks it, and it is released before returning, so another process could
// take it in between (unlikely within one test run).
func FreePort(t testing.TB, addr netip.Addr) int {
	t.Helper()
	p, err := freePort(addr)
	if err != nil {
		t.Fatalf("birdtest: free port on %v: %v", addr, err)
	}
	return p
}

func freePort(addr netip.Addr) (int, error) {
	l, err := net.Listen("tcp", netip.AddrPortFrom(addr, 0).String())
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}
