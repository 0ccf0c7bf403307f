package main

import (
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
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
		{"gc-start-negative", []string{"--node=n", "--gc-start-percent=-1"}, "--gc-start-percent -1: want a GOGC percentage"},
		{"gc-start-off", []string{"--node=n", "--gc-start-percent=0"}, ""},
		{"neighbor-series-negative", []string{"--node=n", "--metrics-neighbor-series=-1"}, "--metrics-neighbor-series -1: want 0 or more"},
		{"neighbor-series-none", []string{"--node=n", "--metrics-neighbor-series=0"}, ""},
		{"max-paths-zero", []string{"--node=n", "--max-paths=0"}, "want 1 to 256"},
		{"max-paths-fine", []string{"--node=n", "--max-paths=4"}, ""},
		{"settle-negative", []string{"--node=n", "--route-settle-max=-1s"}, "want a positive duration"},
		{"settle-fine", []string{"--node=n", "--route-settle-max=30s"}, ""},
		{"rescan-negative", []string{"--node=n", "--route-rescan=-1s"}, "--route-rescan -1s: want a positive duration, or 0 for never"},
		{"rescan-never", []string{"--node=n", "--route-rescan=0"}, ""},
		{"kernel-protocol-bird", []string{"--node=n", "--kernel-route-protocol=12"}, "--kernel-route-protocol 12: want 5 to 255"},
		{"kernel-protocol-felix", []string{"--node=n", "--kernel-route-protocol=80"}, "not a protocol another daemon uses"},
		{"kernel-protocol-frr", []string{"--node=n", "--kernel-route-protocol=188"}, "FRR 186-197"},
		{"kernel-protocol-static", []string{"--node=n", "--kernel-route-protocol=4"}, "want 5 to 255"},
		{"kernel-protocol-fine", []string{"--node=n", "--kernel-route-protocol=202"}, ""},
		{"kernel-metric-zero", []string{"--node=n", "--kernel-route-metric=0"}, "want 1 or more"},
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
	if f.rescan != 30*time.Second || f.kernelProtocol != 201 || f.kernelMetric != 1024 {
		t.Errorf("dataplane defaults: rescan %v, kernel protocol %d, metric %d", f.rescan, f.kernelProtocol, f.kernelMetric)
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

// TestGoBGPAPIOnlyOnLoopback: --gobgp-api takes only a loopback address.
func TestGoBGPAPIOnlyOnLoopback(t *testing.T) {
	for _, addr := range []string{":50051", "0.0.0.0:50051", "10.0.0.1:50051", "[::]:50051", "example.com:50051", "50051"} {
		if _, err := parseRunFlags([]string{"--node", "n", "--gobgp-api", addr}, io.Discard); err == nil {
			t.Errorf("--gobgp-api %s accepted", addr)
		}
	}
	port := strconv.Itoa(0)
	for _, addr := range []string{"127.0.0.1:" + port, "[::1]:" + port, "localhost:" + port} {
		if addr == "[::1]:0" {
			if ln, err := net.Listen("tcp", addr); err != nil {
				continue
			} else {
				ln.Close()
			}
		}
		if _, err := parseRunFlags([]string{"--node", "n", "--gobgp-api", addr}, io.Discard); err != nil {
			t.Errorf("--gobgp-api %s: %v", addr, err)
		}
	}
}
