package watch

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/state"
)

func writeProc(t *testing.T, root, md5Failure, optmem string) {
	t.Helper()
	netstat := "TcpExt: SyncookiesSent TCPMD5NotFound TCPMD5Unexpected TCPMD5Failure TW\n" +
		"TcpExt: 9 2 1 " + md5Failure + " 100\n" +
		"IpExt: InNoRoutes\nIpExt: 3\n"
	for rel, text := range map[string]string{"net/netstat": netstat, "sys/net/core/optmem_max": optmem + "\n"} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKernelPoll: the first read reports both facts; a read with nothing
// changed reports nothing; a grown counter or a new optmem_max is
// reported; an unreadable file reports nothing and keeps the last value.
func TestKernelPoll(t *testing.T) {
	root := t.TempDir()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := &Kernel{Proc: root}
	steps := []struct {
		name            string
		failure, optmem string
		want            []state.Action
	}{
		{"first-read", "0", "131072", []state.Action{state.KernelLimitsObserved{OptmemMax: 131072}, state.MD5FailuresObserved{Count: 3, At: at}}},
		{"unchanged", "0", "131072", nil},
		{"failures-grow", "4", "131072", []state.Action{state.MD5FailuresObserved{Count: 7, At: at}}},
		{"optmem-raised", "4", "4194304", []state.Action{state.KernelLimitsObserved{OptmemMax: 4194304}}},
		{"optmem-garbage", "4", "lots", nil},
	}
	for _, s := range steps {
		writeProc(t, root, s.failure, s.optmem)
		if got := k.Poll(at); !reflect.DeepEqual(got, s.want) {
			t.Errorf("%s: %v, want %v", s.name, got, s.want)
		}
	}
	if err := os.Remove(filepath.Join(root, "net/netstat")); err != nil {
		t.Fatal(err)
	}
	writeProc(t, root, "4", "4194304")
	if got := k.Poll(at); got != nil {
		t.Errorf("after the garbage, the same optmem_max again: %v", got)
	}
}

func TestMD5FailuresParse(t *testing.T) {
	if _, err := md5Failures([]byte("TcpExt: A B\nTcpExt: 1\n")); err == nil || !strings.Contains(err.Error(), "2 names and 1 values") {
		t.Errorf("short values line: %v", err)
	}
	if _, err := md5Failures([]byte("IpExt: A\nIpExt: 1\n")); err == nil {
		t.Errorf("no TcpExt: no error")
	}
	if n, err := md5Failures([]byte("TcpExt: A\nTcpExt: 1\n")); err != nil || n != 0 {
		t.Errorf("no MD5 counters: %d, %v; want 0", n, err)
	}
	real, err := os.ReadFile("/proc/net/netstat")
	if err != nil {
		t.Skip(err)
	}
	if _, err := md5Failures(real); err != nil {
		t.Errorf("this machine's /proc/net/netstat: %v", err)
	}
}

// TestKernelRun: Run dispatches the first read at once and a change at a
// later tick, and returns when its context ends.
func TestKernelRun(t *testing.T) {
	root := t.TempDir()
	writeProc(t, root, "0", "131072")
	got := make(chan state.Action, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (&Kernel{Proc: root, Interval: 10 * time.Millisecond}).Run(ctx, func(a state.Action) { got <- a })
	}()
	next := func() state.Action {
		select {
		case a := <-got:
			return a
		case <-time.After(10 * time.Second):
			t.Fatal("no action within 10 s")
			return nil
		}
	}
	if a, b := next(), next(); a.ActionName() != "kernelLimitsObserved" || b.ActionName() != "md5FailuresObserved" {
		t.Fatalf("first read: %v, %v", a, b)
	}
	writeProc(t, root, "5", "131072")
	if a, ok := next().(state.MD5FailuresObserved); !ok || a.Count != 8 {
		t.Errorf("after the counter grew: %v", a)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
