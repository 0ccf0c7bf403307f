package frr

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/internal/testrig/daemon"
)

// bgpdDirs are searched for bgpd after PATH: Debian installs the FRR
// daemons in /usr/lib/frr, which is in nobody's PATH.
var bgpdDirs = []string{"/usr/lib/frr", "/usr/sbin", "/usr/local/sbin", "/usr/local/lib/frr", "/sbin"}

// vtyshDirs are searched for vtysh after PATH.
var vtyshDirs = []string{"/usr/bin", "/usr/local/bin", "/usr/sbin"}

// minMajor.minMinor is the oldest FRR accepted: 8.4 brought
// "bgp allow-martian-nexthop", which every rendered config holds.
const minMajor, minMinor = 8, 4

type binaries struct {
	bgpd, vtysh string
	// zebra is empty, and zebraErr says why, when zebra cannot be used;
	// only a Config with Zebra needs it.
	zebra    string
	zebraErr error
	// vtyGroup is the group zebra was built to give its vty socket
	// (--enable-vty-group, "frrvty" on Debian); empty when none.
	vtyGroup string
}

// find finds bgpd and vtysh, checks bgpd's version and looks for zebra.
func find() (binaries, error) {
	bgpd, err := daemon.LookPath(bgpdDirs, "bgpd")
	if err != nil {
		return binaries{}, err
	}
	vtysh, err := daemon.LookPath(vtyshDirs, "vtysh")
	if err != nil {
		return binaries{}, err
	}
	// bgpd --version prints "bgpd version 8.4.4" then build details.
	out, err := exec.Command(bgpd, "--version").CombinedOutput()
	if err != nil {
		return binaries{}, fmt.Errorf("%s --version: %v: %s", bgpd, err, strings.TrimSpace(string(out)))
	}
	if _, err := parseVersion(string(out)); err != nil {
		return binaries{}, fmt.Errorf("%s --version: %w", bgpd, err)
	}
	b := binaries{bgpd: bgpd, vtysh: vtysh}
	b.zebra, b.vtyGroup, b.zebraErr = findZebra()
	return b, nil
}

// findZebra finds zebra next to bgpd's usual places and reads, from its
// --version, the vty group it was built with.
func findZebra() (string, string, error) {
	zebra, err := daemon.LookPath(bgpdDirs, "zebra")
	if err != nil {
		return "", "", err
	}
	out, err := exec.Command(zebra, "--version").CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("%s --version: %v: %s", zebra, err, strings.TrimSpace(string(out)))
	}
	return zebra, vtyGroup(string(out)), nil
}

// vtyGroup is the group of '--enable-vty-group=GROUP' in the configure
// arguments that `zebra --version` prints; empty when it has none.
func vtyGroup(version string) string {
	_, rest, ok := strings.Cut(version, "--enable-vty-group=")
	if !ok {
		return ""
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r == '\'' || r == '"' || r <= ' ' })
	if end < 0 {
		end = len(rest)
	}
	return rest[:end]
}

// parseVersion reads "bgpd version X.Y.Z" from the first line and checks
// it is at least minMajor.minMinor.
func parseVersion(out string) (string, error) {
	first, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	v, ok := strings.CutPrefix(strings.TrimSpace(first), "bgpd version ")
	if !ok {
		return "", fmt.Errorf("unexpected output %q", first)
	}
	f := strings.SplitN(v, ".", 3)
	major, err1 := strconv.Atoi(f[0])
	minor := -1
	if len(f) > 1 {
		minor, _ = strconv.Atoi(strings.TrimFunc(f[1], func(r rune) bool { return r < '0' || r > '9' }))
	}
	if err1 != nil || major < minMajor || major == minMajor && minor < minMinor {
		return v, fmt.Errorf("FRR %s is too old: %d.%d or later is needed", v, minMajor, minMinor)
	}
	return v, nil
}

// programs are bgpd, vtysh and zebra, found once per process, for Require.
var programs = &daemon.Programs[binaries]{Find: find, Dependency: daemon.Dependency{What: "peer", Tests: "FRR interop tests"},
	NotAvailable: "!!! FRR NOT AVAILABLE: %v. Install Debian's frr (make deps, as root)."}

// Require makes the test depend on a usable FRR: when bgpd or vtysh is
// missing or FRR is older than 8.4, it skips the test with a loud reason
// (also printed once on stderr, as go test shows skip reasons only with
// -v), except when the environment has CI=true, where it fails the test
// instead.
func Require(t testing.TB) {
	t.Helper()
	programs.Require(t)
}

// requireZebra is Require for a Config with Zebra: zebra too, and ip
// (iproute2) to run the daemons in the namespace.
func requireZebra(t testing.TB) {
	t.Helper()
	Require(t)
	if b, _ := programs.Lookup(); b.zebraErr != nil {
		programs.Missing(t, fmt.Sprintf("!!! FRR's zebra NOT AVAILABLE: %v. Install Debian's frr (make deps, as root).", b.zebraErr))
	}
}

// requireIP: a Config with a Namespace needs iproute2's ip.
func requireIP(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("ip")
	if err != nil {
		programs.Missing(t, "!!! NO ip (iproute2): FRR in a network namespace runs through ip netns exec.")
	}
	return p
}

// FreePort is a TCP port on addr that was free a moment ago: the kernel
// picks it, and it is released before returning, so another process could
// take it in between (unlikely within one test run).
func FreePort(t testing.TB, addr netip.Addr) int {
	t.Helper()
	return daemon.MustFreePort(t, "frrtest", addr)
}
