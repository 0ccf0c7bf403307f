package daemon

import (
	"errors"
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

// Dependency is an external program a harness cannot run without. Keep it
// in a package variable: it prints its stderr line once per process.
type Dependency struct {
	// What is the missing thing in the failure under CI=true: "Under
	// CI=true a missing WHAT is a failure, not a skip."
	What string
	// Tests are the tests skipped without it, in the line on stderr:
	// "TESTS are SKIPPED."
	Tests string

	loud sync.Once
}

// Missing ends t because the dependency is missing; reason says what is
// missing and how to get it. Under CI=true (the environment) it fails t,
// so CI cannot pass without the dependency; otherwise it skips t with
// reason, also printed once on stderr, as go test shows skip reasons only
// with -v.
func (d *Dependency) Missing(t testing.TB, reason string) {
	t.Helper()
	if inCI() {
		t.Fatalf("%s Under CI=true a missing %s is a failure, not a skip.", reason, d.What)
	}
	d.loud.Do(func() { fmt.Fprintf(os.Stderr, "%s %s are SKIPPED.\n", reason, d.Tests) })
	t.Skipf("%s SKIPPED.", reason)
}

// Programs are the programs B a harness runs, looked up once per process
// (the first time they are asked for), and the Dependency a test has on
// them. Keep it in a package variable.
type Programs[B any] struct {
	Dependency
	// NotAvailable is Require's reason when Find fails: a format with one
	// %v, Find's error, that says how to get the programs.
	NotAvailable string
	// Find looks the programs up: them, or why they cannot be used.
	Find func() (B, error)

	once  sync.Once
	found B
	err   error
}

// Lookup is Find's answer, found once.
func (p *Programs[B]) Lookup() (B, error) {
	p.once.Do(func() { p.found, p.err = p.Find() })
	return p.found, p.err
}

// Require makes the test depend on the programs: when Lookup fails it
// ends t (Missing, with NotAvailable).
func (p *Programs[B]) Require(t testing.TB) {
	t.Helper()
	if _, err := p.Lookup(); err != nil {
		p.Missing(t, fmt.Sprintf(p.NotAvailable, err))
	}
}

// RequireBind ends t (Missing) unless every one of addrs (IPv4
// addresses) can be bound on this host: tests that use 127.0.0.0/8 beyond
// 127.0.0.1 need it all on lo, as Linux has it.
func (d *Dependency) RequireBind(t testing.TB, addrs ...string) {
	t.Helper()
	for _, a := range addrs {
		l, err := net.Listen("tcp4", net.JoinHostPort(a, "0"))
		if err != nil {
			d.Missing(t, fmt.Sprintf("!!! CANNOT BIND %s (%v): 127.0.0.0/8 must be on lo.", a, err))
		}
		l.Close()
	}
}

func inCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

// LookPath finds the first of names in PATH, then in dirs (for programs
// installed where PATH does not look, such as /usr/sbin or /usr/lib/frr).
func LookPath(dirs []string, names ...string) (string, error) {
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		for _, dir := range dirs {
			if p := filepath.Join(dir, name); Executable(p) == nil {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%s not found in PATH or %s", strings.Join(names, " or "), strings.Join(dirs, ", "))
}

// Executable says why path is not an executable regular file, or nil.
func Executable(path string) error {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case !st.Mode().IsRegular() || st.Mode()&0o111 == 0:
		return errors.New("not an executable file")
	}
	return nil
}

// FreePort is a TCP port on addr that was free a moment ago: the kernel
// picks it, and it is released before returning, so another process could
// take it in between (unlikely within one test run).
func FreePort(addr netip.Addr) (int, error) {
	l, err := net.Listen("tcp", netip.AddrPortFrom(addr, 0).String())
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

// MustFreePort is FreePort failing t on an error, with a message that
// starts with prefix (the harness's name).
func MustFreePort(t testing.TB, prefix string, addr netip.Addr) int {
	t.Helper()
	p, err := FreePort(addr)
	if err != nil {
		t.Fatalf("%s: free port on %v: %v", prefix, addr, err)
	}
	return p
}
