package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// sh runs a shell script as a Process, its output in a LogBuffer.
func sh(t *testing.T, script string) (*Process, *LogBuffer) {
	t.Helper()
	var out LogBuffer
	p, err := Start("sh", exec.Command("/bin/sh", "-c", script), &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(time.Second) })
	return p, &out
}

func said(out *LogBuffer, word string) func() error {
	return func() error {
		if !strings.Contains(out.String(), word) {
			return errors.New("not yet")
		}
		return nil
	}
}

func TestStopTerminates(t *testing.T) {
	p, out := sh(t, "echo up; exec sleep 30")
	if err := p.WaitReady(5*time.Second, "sh", said(out, "up")); err != nil {
		t.Fatal(err)
	}
	if exited, _ := p.Exited(); exited {
		t.Fatal("exited before Stop")
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatalf("Stop = %v, want nil after SIGTERM", err)
	}
	exited, status := p.Exited()
	if !exited || status == nil || !strings.Contains(status.Error(), "terminated") {
		t.Fatalf("Exited = %v, %v; want true, signal: terminated", exited, status)
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatalf("second Stop = %v", err)
	}
}

// TestStopKills: a process that ignores SIGTERM (the ignored disposition
// survives exec) is killed once the timeout passes.
func TestStopKills(t *testing.T) {
	p, out := sh(t, `trap "" TERM; echo trapped; exec sleep 30`)
	if err := p.WaitReady(5*time.Second, "sh", said(out, "trapped")); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	err := p.Stop(200 * time.Millisecond)
	if err == nil || err.Error() != "sh ignored SIGTERM for 200ms and was killed" {
		t.Fatalf("Stop = %v", err)
	}
	if waited := time.Since(started); waited < 200*time.Millisecond {
		t.Errorf("killed after %v, before the timeout", waited)
	}
	if _, status := p.Exited(); status == nil || !strings.Contains(status.Error(), "killed") {
		t.Errorf("exit status %v, want signal: killed", status)
	}
}

// TestKill: Kill does not wait for a process that ignores SIGTERM; it
// ends it with SIGKILL at once, and a second Kill does nothing.
func TestKill(t *testing.T) {
	p, out := sh(t, `trap "" TERM; echo trapped; exec sleep 30`)
	if err := p.WaitReady(5*time.Second, "sh", said(out, "trapped")); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("Kill = %v", err)
	}
	exited, status := p.Exited()
	if !exited || status == nil || !strings.Contains(status.Error(), "killed") {
		t.Fatalf("Exited = %v, %v; want true, signal: killed", exited, status)
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("second Kill = %v", err)
	}
}

func TestWaitReadyFails(t *testing.T) {
	t.Run("process-exits", func(t *testing.T) {
		p, _ := sh(t, "exit 3")
		err := p.WaitReady(5*time.Second, "sh", func() error { return errors.New("no") })
		if err == nil || err.Error() != "sh exited during startup (exit status 3)" {
			t.Fatalf("WaitReady = %v", err)
		}
		<-p.Done()
	})
	t.Run("deadline", func(t *testing.T) {
		p, _ := sh(t, "exec sleep 30")
		err := p.WaitReady(100*time.Millisecond, "the socket", func() error { return os.ErrNotExist })
		if !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "the socket did not answer within 100ms: ") {
			t.Fatalf("WaitReady = %v", err)
		}
	})
}

func TestLogBuffer(t *testing.T) {
	var l LogBuffer
	var lines []string
	for _, chunk := range []string{"one\ntw", "o\n", "three"} {
		if _, err := l.WriteLines([]byte(chunk), func(s string) { lines = append(lines, s) }); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(lines) != "[one two]" || l.String() != "one\ntwo\nthree" {
		t.Fatalf("lines %q, kept %q", lines, l.String())
	}
	big := strings.Repeat("x", 1<<20) + "\n"
	for range 5 {
		if _, err := l.Write([]byte(big)); err != nil {
			t.Fatal(err)
		}
	}
	kept := l.String()
	if len(kept) > maxLog || !strings.HasPrefix(kept, "[earlier output dropped]\n") || !strings.HasSuffix(kept, big) {
		t.Fatalf("kept %d bytes starting %.40q", len(kept), kept)
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{"daemontest-prog": 0o755, "daemontest-data": 0o644} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	got, err := LookPath([]string{t.TempDir(), dir}, "daemontest-none", "daemontest-prog")
	if err != nil || got != filepath.Join(dir, "daemontest-prog") {
		t.Fatalf("LookPath = %q, %v", got, err)
	}
	_, err = LookPath([]string{dir}, "daemontest-data", "daemontest-none")
	want := "daemontest-data or daemontest-none not found in PATH or " + dir
	if err == nil || err.Error() != want {
		t.Fatalf("LookPath = %v, want %q", err, want)
	}
	if err := Executable(dir); err == nil {
		t.Error("a directory is executable")
	}
}

func TestFreePort(t *testing.T) {
	addr := netip.MustParseAddr("127.0.0.1")
	port := MustFreePort(t, "daemontest", addr)
	l, err := net.Listen("tcp", netip.AddrPortFrom(addr, uint16(port)).String())
	if err != nil {
		t.Fatalf("port %d is not free: %v", port, err)
	}
	l.Close()
}

func TestSocketDir(t *testing.T) {
	dir := t.TempDir()
	if got := SocketDir(t, "daemontest", dir, "x.sock", 1000); got != dir {
		t.Errorf("short enough: got %q, want %q", got, dir)
	}
	got := SocketDir(t, "daemontest", dir, "x.sock", len(dir))
	if st, err := os.Stat(got); got == dir || err != nil || !st.IsDir() {
		t.Errorf("too long: got %q (%v)", got, err)
	}
}

// ender is a testing.TB whose Fatalf and Skipf record how the test would
// have ended and end only the calling goroutine.
type ender struct {
	testing.TB
	ended string
}

func (e *ender) end(how, format string, args []any) {
	e.ended = how + ": " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (e *ender) Fatalf(format string, args ...any) { e.end("fail", format, args) }
func (e *ender) Skipf(format string, args ...any)  { e.end("skip", format, args) }

func TestDependencyMissing(t *testing.T) {
	d := &Dependency{What: "peer", Tests: "Widget tests"}
	for _, tc := range []struct{ ci, want string }{
		{ci: "true", want: "fail: !!! NO WIDGET. Under CI=true a missing peer is a failure, not a skip."},
		{ci: "", want: "skip: !!! NO WIDGET. SKIPPED."},
	} {
		t.Setenv("CI", tc.ci)
		e := &ender{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			d.Missing(e, "!!! NO WIDGET.")
		}()
		<-done
		if e.ended != tc.want {
			t.Errorf("CI=%q: %q, want %q", tc.ci, e.ended, tc.want)
		}
	}
}

// TestPrograms: Find runs once however often the programs are asked for;
// Require ends the test with NotAvailable when it failed.
func TestPrograms(t *testing.T) {
	t.Setenv("CI", "")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{err: nil, want: ""},
		{err: errors.New("no widget in PATH"), want: "skip: !!! WIDGET NOT AVAILABLE: no widget in PATH. Get one. SKIPPED."},
	} {
		finds := 0
		p := &Programs[string]{Dependency: Dependency{What: "widget", Tests: "Widget tests"},
			NotAvailable: "!!! WIDGET NOT AVAILABLE: %v. Get one.",
			Find:         func() (string, error) { finds++; return "/bin/widget", tc.err }}
		e := &ender{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.Require(e)
			p.Require(e)
		}()
		<-done
		if got, err := p.Lookup(); got != "/bin/widget" || err != tc.err || finds != 1 {
			t.Errorf("Lookup = %q, %v after %d Find calls; want /bin/widget, %v, 1", got, err, finds, tc.err)
		}
		if e.ended != tc.want {
			t.Errorf("Require with Find error %v: %q, want %q", tc.err, e.ended, tc.want)
		}
	}
}

// TestRequireBind: an address of lo passes; one this host does not have
// (TEST-NET-1) is a missing dependency.
func TestRequireBind(t *testing.T) {
	d := &Dependency{What: "address", Tests: "Widget tests"}
	t.Setenv("CI", "")
	for _, tc := range []struct{ addr, want string }{
		{addr: "127.0.0.1", want: ""},
		{addr: "192.0.2.1", want: "skip: !!! CANNOT BIND 192.0.2.1 ("},
	} {
		e := &ender{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			d.RequireBind(e, tc.addr)
		}()
		<-done
		if !strings.HasPrefix(e.ended, tc.want) || (tc.want == "") != (e.ended == "") {
			t.Errorf("%s: %q, want %q...", tc.addr, e.ended, tc.want)
		}
	}
}

// TestPoll: Poll returns the first value ok accepts; it fails with the
// last value seen when the process exits or the context ends first.
func TestPoll(t *testing.T) {
	p, _ := sh(t, "exec sleep 30")
	n := 0
	count := func() (int, error) { n++; return n, nil }
	got, err := Poll(context.Background(), p, time.Millisecond, count, func(v int) bool { return v == 3 })
	if got != 3 || err != nil {
		t.Fatalf("Poll = %d, %v; want 3", got, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = Poll(ctx, p, time.Millisecond, func() (string, error) { return "v", errors.New("no") },
		func(string) bool { return true })
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasSuffix(err.Error(), "; last seen: v (query error: no)") {
		t.Fatalf("Poll = %v, want the deadline with the last value and error", err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	got, err = Poll(context.Background(), p, time.Millisecond, count, func(int) bool { return false })
	if got != 4 || err == nil || err.Error() != "sh exited (signal: killed)" {
		t.Fatalf("Poll = %d, %v; want 4, sh exited (signal: killed)", got, err)
	}
}
