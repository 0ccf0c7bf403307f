package kube

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/peeragent/peeragent/internal/testrig/daemon"
)

// stopTimeout is how long a process gets after SIGTERM before SIGKILL.
const stopTimeout = 15 * time.Second

// proc is one program, run again by each start, its output appended to a
// log file.
type proc struct {
	name    string // "etcd" or "kube-apiserver"
	path    string
	args    []string
	logFile string

	run *daemon.Process // the last run; nil before the first
}

// start runs the program; the log file keeps the output of every run.
func (p *proc) start() error {
	log, err := os.OpenFile(p.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close() // the process writes to its own copy of the descriptor
	fmt.Fprintf(log, "=== kubetest: %s %v\n", time.Now().Format(time.RFC3339Nano), p.args)
	run, err := daemon.Start(p.name, exec.Command(p.path, p.args...), log)
	if err != nil {
		return fmt.Errorf("start %s: %w", p.path, err)
	}
	p.run = run
	return nil
}

// exitErr says how the last run ended, once it has.
func (p *proc) exitErr() error {
	if _, err := p.run.Exited(); err != nil {
		return fmt.Errorf("%s exited: %w", p.name, err)
	}
	return fmt.Errorf("%s exited", p.name)
}

// stop sends SIGTERM, then SIGKILL after stopTimeout, and waits for the
// exit. Stopping a process that is not running does nothing.
func (p *proc) stop() error {
	if p.run == nil {
		return nil
	}
	return p.run.Stop(stopTimeout)
}

// tail is the last n lines of the log file.
func (p *proc) tail(n int) string {
	data, err := os.ReadFile(p.logFile)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// freePort is a TCP port on 127.0.0.1 that was free a moment ago (see
// daemon.FreePort).
func freePort() (int, error) {
	return daemon.FreePort(netip.AddrFrom4([4]byte{127, 0, 0, 1}))
}

// stablePort is a free TCP port on 127.0.0.1 below the kernel's ephemeral
// range, for kube-apiserver, which Restart starts again on the same port:
// a port the kernel picked (freePort) is one it also hands out as the local
// port of outgoing connections, and one did take it while kube-apiserver
// was down ("bind: address already in use"). Below the range, only a
// listener can take it.
func stablePort() (int, error) {
	low := ephemeralLow()
	const from = 10000
	if low <= from+100 {
		return freePort()
	}
	for range 200 {
		port := from + rand.IntN(low-from)
		l, err := net.Listen("tcp", netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(port)).String())
		if err == nil {
			return port, l.Close()
		}
	}
	return freePort()
}

// ephemeralLow is the first port of net.ipv4.ip_local_port_range (32768
// when it cannot be read).
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 1024 || n > 65535 {
		return 32768
	}
	return n
}
