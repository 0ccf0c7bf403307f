// Package bird runs a real BIRD 2 (Debian's bird2) as a BGP peer in
// tests, on loopback, bounded in time, and cleaned up after the test.
//
// # Contract
//
//   - Require(t) makes a test depend on BIRD 2: if bird or birdc is missing
//     (PATH, then /usr/sbin, /usr/local/sbin, /sbin) the test is skipped with
//     a loud reason, also printed once on stderr (go test shows skip reasons
//     only with -v; in package-list mode, `go test ./...`, it shows nothing
//     of a passing package, stderr included); under CI=true it fails
//     instead, so CI cannot pass without BIRD. `make deps` (run by `make
//     test`) installs bird2 as root when apt-get is available, and says so
//     when it cannot.
//   - Start(t, cfg) writes cfg.Render() as bird.conf into t.TempDir() and runs
//     `bird -f -c bird.conf -s bird.ctl` in the foreground, its log (stderr,
//     with protocol state and event debugging) captured. It returns when the
//     control socket answers, or fails the test within 10 s. A cleanup sends
//     SIGTERM, then SIGKILL after 5 s, and waits for the process; BIRD's
//     output is logged when the test failed. Pdeathsig kills BIRD if the test
//     binary dies without cleaning up.
//   - Every session binds its local address and port (strict bind), uses
//     multihop (on loopback no eBGP neighbor is directly connected; without
//     it BIRD refuses with "Invalid next hop"), retries a connection within
//     about 2 s and restarts after an error within 1 to 5 s, instead of
//     BIRD's production defaults of minutes. Passwords are TCP-MD5 keys,
//     kept in plain text: test-only. BIRD strings have no escapes, so a
//     password cannot contain '"' or a newline.
//   - Protocols parses `birdc show protocols all`. The evidence that a
//     session was not reset between two readings is ProtocolState.Since,
//     BIRD's time of the protocol's last state change: compare readings with
//     SameSessionAs (Since jitters by microseconds between queries, see
//     SinceJitter). Bird.Establishments counts the "BGP session established"
//     lines of BIRD's own log since Start: exact, whatever the timing. Route
//     counters (ChannelState) are zeroed by a reset, and the "Last error"
//     line is gone once a session is Established again, so neither proves
//     the absence of a reset.
//   - Neighbor.GracefulRestart and GracefulRestartTime set BIRD's graceful
//     restart mode (on, aware, off) and the restart time it advertises; the
//     capabilities both sides sent are ProtocolState.LocalCaps and
//     NeighborCaps, so a test can check what was negotiated.
//   - Kill ends BIRD with SIGKILL (no Cease: its peers see the TCP session
//     end, a graceful-restart cause); Stop ends it with SIGTERM, after which
//     BIRD closes its sessions itself.
//   - Config.Netns runs BIRD inside a network namespace the test made
//     (`ip netns exec`); its control socket stays outside, for birdc.
//   - Reconfigure rewrites bird.conf and runs `birdc configure`: BIRD restarts
//     only protocols whose configuration changed (a password rotation
//     restarts the session; an identical config restarts nothing).
//
// Addresses: 127.0.0.0/8 is bindable on Linux without setup (127.0.0.1 and
// 127.0.0.2 are used by the self-test); IPv6 loopback has only ::1. Use
// FreePort for ports. Routes BIRD learns over loopback show as
// "unreachable" in `show route` (their next hop does not resolve in BIRD's
// tables) but are imported and counted all the same.
//
// Announce makes BIRD originate prefixes (static blackhole routes) and
// export them to every neighbor of the same family; BIRD imports all.
package bird
