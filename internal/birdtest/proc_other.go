//go:build !linux

package birdtest

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
