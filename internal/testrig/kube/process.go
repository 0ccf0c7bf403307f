package kube

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
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
