package kubetest

import "syscall"

// sysProcAttr kills etcd and kube-apiserver when the test binary dies
// without running its cleanups (a panic or a go test -timeout).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
