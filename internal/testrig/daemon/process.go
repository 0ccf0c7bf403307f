package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// readyPoll is how often WaitReady asks.
const readyPoll = 50 * time.Millisecond

// Process is one run of a program started by Start. Its methods are safe
// for concurrent use.
type Process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, set before done closes
}

// Start runs cmd in the foreground, its standard output and error both
// going to out, and reaps it in the background. On Linux the process is
// killed when the test binary dies without running its cleanups (a panic
// or a go test -timeout), so no daemon outlives the run. name is the
// program's name in messages ("bird", "etcd").
func Start(name string, cmd *exec.Cmd, out io.Writer) (*Process, error) {
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended, and its exit status.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Pid is the process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stop sends SIGTERM, then SIGKILL when the process has not exited within
// timeout, and waits for it to exit. Stopping a process that has exited
// does nothing. The error says when SIGTERM could not be sent or was
// ignored; the process is gone either way.
func (p *Process) Stop(timeout time.Duration) error {
	if exited, _ := p.Exited(); exited {
		return nil
	}
	termErr := p.cmd.Process.Signal(syscall.SIGTERM)
	if errors.Is(termErr, os.ErrProcessDone) {
		termErr = nil
	}
	select {
	case <-p.done:
		return termErr
	case <-time.After(timeout):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	if termErr != nil {
		return termErr
	}
	return fmt.Errorf("%s ignored SIGTERM for %v and was killed", p.name, timeout)
}

// Kill ends the process abruptly with SIGKILL and waits for it to exit:
// it runs no shutdown of its own, and the kernel closes its sockets (a
// BGP peer sees the connection end without a NOTIFICATION). Killing a
// process that has exited does nothing.
func (p *Process) Kill() error {
	if exited, _ := p.Exited(); exited {
		return nil
	}
	err := p.cmd.Process.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		err = nil
	}
	<-p.done
	return err
}

// WaitReady calls ready every 50 ms until it returns nil. It fails when
// the process exits first ("NAME exited during startup (STATUS)"), or when
// timeout has passed ("WHAT did not answer within TIMEOUT: ERR", with
// ready's last error).
func (p *Process) WaitReady(timeout time.Duration, what string, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		if exited, status := p.Exited(); exited {
			return fmt.Errorf("%s exited during startup (%v)", p.name, status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer within %v: %w", what, timeout, err)
		}
		time.Sleep(readyPoll)
	}
}

// Poll calls get every interval until ok holds for the value it returns,
// and returns that value. It fails when p exits first ("NAME exited
// (STATUS)") or when ctx ends ("CTX ERROR; last seen: VALUE (query error:
// ERR)", wrapping ctx's error), returning the last value seen.
func Poll[S any](ctx context.Context, p *Process, interval time.Duration, get func() (S, error), ok func(S) bool) (S, error) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		v, err := get()
		if err == nil && ok(v) {
			return v, nil
		}
		if exited, status := p.Exited(); exited {
			return v, fmt.Errorf("%s exited (%v)", p.name, status)
		}
		select {
		case <-ctx.Done():
			return v, fmt.Errorf("%w; last seen: %v (query error: %v)", ctx.Err(), v, err)
		case <-tick.C:
		}
	}
}
