package main

import (
	"io"
	"log/slog"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRunFlagBounds(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"journal-too-big", []string{"--node=n", "--journal-size=2000000000"}, "--journal-size 2000000000: want 1 to 100000"},
		{"journal-zero", []string{"--node=n", "--journal-size=0"}, "--journal-size 0"},
		{"journal-fine", []string{"--node=n", "--journal-size=5000"}, ""},
		{"max-paths-zero", []string{"--node=n", "--max-paths=0"}, "want 1 to 256"},
		{"max-paths-fine", []string{"--node=n", "--max-paths=4"}, ""},
		{"settle-negative", []string{"--node=n", "--route-settle-max=-1s"}, "want a positive duration"},
		{"settle-fine", []string{"--node=n", "--route-settle-max=30s"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseRunFlags(tc.args, io.Discard)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
	f, err := parseRunFlags([]string{"--node=n", "--bgp-listen-address=127.0.0.1", "--bgp-listen-address=::1", "--bgp-listen-address=127.0.0.1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"127.0.0.1", "::1"}; !slices.Equal(f.listen, want) {
		t.Errorf("listen %v, want %v", f.listen, want)
	}
	if o := f.opts(); o.MaxPaths != 16 || o.RouteSettleMax.Duration != 240*time.Second {
		t.Errorf("route option defaults: max paths %d, settle max %v", o.MaxPaths, o.RouteSettleMax)
	}
	f, err = parseRunFlags([]string{"--node=n", "--max-paths=4", "--route-settle-max=30s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o := f.opts(); o.MaxPaths != 4 || o.RouteSettleMax.Duration != 30*time.Second {
		t.Errorf("route options: max paths %d, settle max %v", o.MaxPaths, o.RouteSettleMax)
	}
}

// TestHangupIgnored: a SIGHUP to the process is logged, and the process
// lives on.
func TestHangupIgnored(t *testing.T) {
	logged := make(chan string, 4)
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) { logged <- string(p); return len(p), nil }), nil))
	stop := ignoreHangup(log)
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-logged:
		if !strings.Contains(l, "SIGHUP ignored") {
			t.Errorf("logged %q", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP not logged")
	}
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }
