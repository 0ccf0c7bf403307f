package kubetest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// stopTimeout is how long a process gets after SIGTERM before SIGKILL.
const stopTimeout = 15 * time.Second

// proc is one run of a program, its output appended to a log file.
type proc struct {
	name    string // "etcd" or "kube-apiserver"
	path    string
	args    []string
	logFile string

	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done closes
}

// start runs the program; the log file keeps the output of every run.
func (p *proc) start() error {
	log, err := os.OpenFile(p.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "=== kubetest: %s %v\n", time.Now().Format(time.RFC3339Nano), p.args)
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", p.path, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func(done chan struct{}) {
		p.waitErr = cmd.Wait()
		log.Close()
		close(done)
	}(p.done)
	return nil
}

// running reports whether the last run has not exited yet.
func (p *proc) running() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// exitErr says how the last run ended, once it has.
func (p *proc) exitErr() error {
	if p.waitErr == nil {
		return fmt.Errorf("%s exited", p.name)
	}
	return fmt.Errorf("%s exited: %w", p.name, p.waitErr)
}

// stop sends SIGTERM, then SIGKILL after stopTimeout, and waits for the
// exit. Stopping a process that is not running does nothing.
func (p *proc) stop() error {
	if !p.running() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return fmt.Errorf("%s ignored SIGTERM for %v and was killed", p.name, stopTimeout)
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

// freePort is a TCP port on 127.0.0.1 that was free a moment ago: the
// kernel picks it and it is released before returning, so another process
// could take it in between (unlikely within one test run).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}
