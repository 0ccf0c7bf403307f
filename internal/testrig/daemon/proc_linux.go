package daemon

import "syscall"

// sysProcAttr kills the process when the test binary dies without running
// its cleanups (a panic or a go test -timeout), so no daemon outlives the run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
