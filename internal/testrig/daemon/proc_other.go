//go:build !linux

package daemon

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
