//go:build !linux

package frrtest

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
