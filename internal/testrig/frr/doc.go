// Package frr runs a real FRR bgpd (Debian's frr, 8.4 or later) as a
// BGP peer in tests, on loopback, bounded in time, and cleaned up after the
// test. It mirrors internal/testrig/bird.
//
// # Contract
//
//   - Require(t) makes a test depend on FRR: if bgpd (PATH, then
//     /usr/lib/frr, /usr/sbin, /usr/local/sbin, /usr/local/lib/frr, /sbin)
//     or vtysh is missing, or FRR is older than 8.4, the test is skipped
//     with a loud reason, also printed once on stderr; under CI=true it
//     fails instead, so CI cannot pass without FRR. `make deps` (run by
//     `make test`) installs frr as root when apt-get is available. The
//     package's systemd service is not used and need not run.
//   - Start(t, cfg) has vtysh parse cfg.Render() (vtysh -C), writes it as
//     bgpd.conf into t.TempDir() and runs bgpd in the foreground, as the
//     user running the test, with no zebra and no TCP vty: `bgpd -Z -S -p
//     PORT -l ADDRESS -P 0 --vty_socket DIR -f bgpd.conf -i bgpd.pid --log
//     stdout` (-S: no capability checks and no switch to user frr).
//     Its log (debug level, neighbor events) is captured. Start returns when
//     vtysh answers with every configured neighbor, or fails the test within
//     10 s; it also fails when bgpd logged a config line it could not apply
//     (bgpd runs on without such a line). A cleanup sends SIGTERM, then
//     SIGKILL after 5 s, and waits for the process; bgpd's output is logged
//     when the test failed. Pdeathsig kills bgpd if the test binary dies.
//     Several instances run at once: each has its own address or port,
//     vty socket directory and pid file.
//   - Config.Namespace runs the daemons in a network namespace the test
//     made (internal/testrig/netns), through `ip netns exec NS`.
//     Config.Zebra (which needs a Namespace, as zebra programs the kernel
//     it runs with) starts zebra first: `zebra -u root -g VTYGROUP -z
//     DIR/zserv.api --vty_socket DIR -P 0 -f zebra.conf -i zebra.pid --log
//     stdout` (VTYGROUP is the --enable-vty-group zebra --version shows,
//     frrvty on Debian: zebra, which has no -S, refuses a user outside
//     it), waits for its vty and socket, then runs bgpd with -z
//     DIR/zserv.api instead of -Z, and waits until zebra lists bgpd as a
//     client. bgpd then knows the interfaces: a neighbor on a connected
//     subnet is directly connected, and an IPv6 neighbor on a shared link
//     gets two next hops, the global one then FRR's link-local one
//     (NeighborState.Connection "sharedNetwork", NexthopLocal); see
//     TestZebraSharedLink. ExecZebra asks zebra.
//   - Every neighbor gets the local address as update-source, a 1 s connect
//     retry (FRR's default is 120 s) and, when eBGP without zebra,
//     ebgp-multihop (without zebra bgpd knows no interface, so no neighbor
//     is directly connected). Keepalive 3 s, hold 9 s. "no bgp ebgp-requires-policy":
//     eBGP routes flow without route maps. "bgp allow-martian-nexthop":
//     without it FRR answers an UPDATE whose next hop is in 127.0.0.0/8
//     with a NOTIFICATION (Invalid NEXT_HOP) and the session flaps every
//     few seconds, which would make any loopback peer that announces a
//     route look unstable. Passwords are TCP-MD5 keys (1 to 80 printable
//     ASCII characters, no spaces), in plain text: test-only.
//   - Talking to bgpd goes through vtysh (`vtysh --vty_socket DIR -d bgpd
//     -c ...`), see Exec; about 50 ms a call. Neighbors parses `show bgp
//     neighbors json`; Route one prefix of the table (its paths'
//     communities and next hops). The evidence that a session was not reset between
//     two readings is NeighborState.ConnectionsEstablished, FRR's own
//     count of the times the session entered Established (with
//     ConnectionsDropped, the exits from it): compare readings with
//     SameSessionAs, or use FRR.Establishments. The counters live as long
//     as the neighbor is configured; deleting it or restarting bgpd starts
//     them again at 0.
//   - Reconfigure runs, through vtysh, only the commands that turn the
//     running config into the new one, then rewrites bgpd.conf: an
//     unchanged neighbor is not touched (and setting the same password
//     again does not reset a session either); a password rotation resets
//     the session once. When both sides rotate, the session comes back
//     within about 2 s with ConnectionsEstablished one higher. Address,
//     Port and AS cannot change (they are bgpd flags, and the AS names
//     the BGP instance).
//
// Addresses: IPv4 on loopback (127.0.0.0/8 is bindable on Linux without
// setup), ::1 with an IPv4 RouterID, or any address of the Namespace.
// Use FreePort for ports. Announce makes bgpd originate prefixes
// ("network", no import check) to every neighbor, with its own address as
// next hop.
//
// Outside the temp dirs, bgpd and zebra write only /var/tmp/frr/bgpd.PID
// and zebra.PID (per process log buffers), which they remove on a clean
// exit and Stop removes after a SIGKILL; one is left behind when the test
// binary itself dies.
package frr
