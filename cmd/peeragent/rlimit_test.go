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

// TestListenerCaps: the listeners' caps leave fdReserve descriptors under
// the open-files limit, cut in proportion, never below agent.MinMaxConns.
func TestListenerCaps(t *testing.T) {
	tests := []struct {
		name          string
		limit         uint64
		http, metrics int
		wantH, wantM  int
		wantShrunk    bool
	}{
		{name: "unknown-limit-keeps", limit: 0, http: 64, metrics: 64, wantH: 64, wantM: 64},
		{name: "roomy-limit-keeps", limit: 1 << 20, http: 64, metrics: 64, wantH: 64, wantM: 64},
		{name: "exact-fit-keeps", limit: fdReserve + 128, http: 64, metrics: 64, wantH: 64, wantM: 64},
		{name: "tight-limit-cuts-in-proportion", limit: fdReserve + 60, http: 64, metrics: 32, wantH: 40, wantM: 20, wantShrunk: true},
		{name: "tiny-limit-floors", limit: 100, http: 64, metrics: 64, wantH: 2, wantM: 2, wantShrunk: true},
		{name: "no-metrics-listener", limit: fdReserve + 10, http: 64, metrics: 0, wantH: 10, wantM: 0, wantShrunk: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, m, shrunk := listenerCaps(tt.limit, tt.http, tt.metrics)
			if h != tt.wantH || m != tt.wantM || shrunk != tt.wantShrunk {
				t.Errorf("listenerCaps(%d, %d, %d) = %d, %d, %v; want %d, %d, %v", tt.limit, tt.http, tt.metrics,
					h, m, shrunk, tt.wantH, tt.wantM, tt.wantShrunk)
			}
		})
	}
}
