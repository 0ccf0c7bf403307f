package vpp

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/adapter/mock"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib"
)

func TestConnectFailsClearly(t *testing.T) {
	dir := t.TempDir()
	silent := filepath.Join(dir, "silent.sock")
	listenSilently(t, silent)
	tests := []struct {
		name    string
		path    string
		timeout time.Duration
		wantErr []string
	}{{
		name:    "empty-path",
		path:    "",
		timeout: time.Second,
		wantErr: []string{"connect to VPP", "no VPP API socket path given"},
	}, {
		name:    "missing-socket",
		path:    filepath.Join(dir, "absent.sock"),
		timeout: time.Second,
		wantErr: []string{"connect to VPP at " + filepath.Join(dir, "absent.sock"), "does not exist"},
	}, {
		// VPP accepting the socket but never answering must not hold
		// start-up beyond the caller's deadline.
		name:    "silent-socket-is-bounded",
		path:    silent,
		timeout: 300 * time.Millisecond,
		wantErr: []string{"connect to VPP at " + silent + ": "},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			start := time.Now()
			exec, err := Connect(ctx, tt.path, nil)
			if err == nil {
				exec.Close()
				t.Fatal("Connect succeeded, want an error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if took := time.Since(start); took > tt.timeout+2*time.Second {
				t.Errorf("Connect took %v with a %v deadline", took, tt.timeout)
			}
		})
	}
}

// listenSilently accepts connections on a unix socket and never writes.
func listenSilently(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listen on %s: %v", path, err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
}

// TestConnectRegistersSource: at connect the executor finds its FIB
// source by name (a previous run's) or adds it, weaker than API
// (docs/routes.md §9.7).
func TestConnectRegistersSource(t *testing.T) {
	api80 := &fib.FibSourceDetails{Src: fib.FibSource{Priority: 0x80, ID: 8, Name: "API"}}
	tests := []struct {
		name    string
		details []api.Message
		want    []api.Message
		wantID  uint8
	}{{
		name:    "adds-when-absent",
		details: []api.Message{api80},
		want: []api.Message{&fib.FibSourceDump{},
			&fib.FibSourceAdd{Src: fib.FibSource{Priority: 0x82, ID: 0, Name: "peeragent"}}},
		wantID: 25, // fakeVPP's answer to fib_source_add
	}, {
		name:    "finds-a-previous-runs-source",
		details: []api.Message{api80, &fib.FibSourceDetails{Src: fib.FibSource{Priority: 0x82, ID: 31, Name: "peeragent"}}},
		want:    []api.Message{&fib.FibSourceDump{}},
		wantID:  31,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAdapter(t)
			f.queueDump(tt.details...)
			exec, err := connectWith(context.Background(), f.adapter, "mock", nil)
			if err != nil {
				t.Fatalf("connectWith: %v", err)
			}
			defer exec.Close()
			if diff := cmp.Diff(tt.want, f.requestsSent()); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if got := uint8(exec.source.Load()); got != tt.wantID {
				t.Errorf("source id %d, want %d", got, tt.wantID)
			}
		})
	}
}

func TestConnectWithAdapter(t *testing.T) {
	t.Run("connects-and-close-disconnects-once", func(t *testing.T) {
		f := newFakeAdapter(t)
		a := f.adapter
		f.queueDump(&fib.FibSourceDetails{Src: fib.FibSource{Priority: 0x80, ID: 8, Name: "API"}})
		var disconnects atomic.Int32
		a.SetDisconnectCallback(func() { disconnects.Add(1) })
		exec, err := connectWith(context.Background(), a, "mock", nil)
		if err != nil {
			t.Fatalf("connectWith: %v", err)
		}
		if !exec.Enabled() {
			t.Error("Enabled() = false after a successful connect")
		}
		exec.Close()
		exec.Close()
		if n := disconnects.Load(); n != 1 {
			t.Errorf("adapter disconnected %d times, want 1", n)
		}
	})
	t.Run("adapter-error-is-wrapped", func(t *testing.T) {
		a := mock.NewVppAdapter()
		refused := errors.New("refused")
		a.MockConnectError(refused)
		_, err := connectWith(context.Background(), a, "mock", nil)
		if !errors.Is(err, refused) || !strings.HasPrefix(err.Error(), "connect to VPP at mock: ") {
			t.Errorf("error = %v, want %q wrapped with the target", err, refused)
		}
	})
	t.Run("late-connection-is-closed", func(t *testing.T) {
		a := mock.NewVppAdapter()
		release := make(chan struct{})
		a.SetConnectCallback(func() { <-release })
		disconnected := make(chan struct{})
		a.SetDisconnectCallback(func() { close(disconnected) })
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := connectWith(ctx, a, "mock", nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error = %v, want the deadline", err)
		}
		close(release)
		select {
		case <-disconnected:
		case <-time.After(5 * time.Second):
			t.Fatal("a connection completing after the deadline was never closed")
		}
	})
}
