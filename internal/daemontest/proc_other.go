//go:build !linux

package daemontest

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
