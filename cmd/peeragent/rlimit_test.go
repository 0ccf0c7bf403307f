package main

import (
	"io"
	"log/slog"
	"syscall"
	"testing"
)

// TestRaiseOpenFiles: a soft limit below the hard one is raised to it.
func TestRaiseOpenFiles(t *testing.T) {
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	if orig.Max < 1024 {
		t.Skipf("hard limit %d", orig.Max)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig) })
	low := syscall.Rlimit{Cur: 512, Max: orig.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	raiseOpenFiles(slog.New(slog.NewTextHandler(io.Discard, nil)))
	var got syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &got); err != nil {
		t.Fatal(err)
	}
	if got.Cur != orig.Max {
		t.Errorf("soft limit %d, want the hard limit %d", got.Cur, orig.Max)
	}
}
