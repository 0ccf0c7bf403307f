package gobgp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// TestAcceptFailureSeenThroughHandler: GoBGP's "Failed to AcceptTCP" line
// reaches the executor's callback with its error scrubbed.
func TestAcceptFailureSeenThroughHandler(t *testing.T) {
	r := newRedactor()
	r.remember(netip.MustParseAddr("10.0.0.2"), "hunter2")
	level := new(slog.LevelVar)
	level.Set(slog.LevelError)
	h := newScrubHandler(slog.NewTextHandler(io.Discard, nil), level, r)
	var got []string
	h.acceptFailed = func(why string) { got = append(got, why) }
	l := slog.New(h).With(slog.String("Topic", "Peer"))
	l.Warn("Failed to AcceptTCP", slog.String("Topic", "Peer"), slog.String("Error", "accept tcp 0.0.0.0:179: too many open files hunter2"))
	l.Warn("Failed to SetKeepAlive", slog.String("Error", "x"))
	if len(got) != 1 || got[0] != "accept tcp 0.0.0.0:179: too many open files [redacted]" {
		t.Errorf("accept failures seen: %q", got)
	}
}

// answered reports whether our speaker answers a connection to port on
// 127.0.0.1: it closes one from an address that is no neighbor at once
// (EOF). A listener whose accept loop ended leaves it unanswered (the
// kernel completed the handshake, nobody reads), and a stopped one refuses.
func answered(port uint16) error {
	c, err := net.DialTimeout("tcp4", net.JoinHostPort("127.0.0.1", itoa(port)), 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err = c.Read(make([]byte, 1))
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	return errors.New("not answered: " + err.Error())
}

const acceptHelperEnv = "PEERAGENT_ACCEPT_HELPER"

// TestListenerDeadAfterFDExhaustion: a process out of file descriptors
// (as 20,000 idle admin connections made it) makes GoBGP's accept fail,
// and GoBGP's accept loop ends for good. The executor sees it, stops that
// speaker and reports a ServerApplyFailed; the StartServer the server
// retry then sends brings up a speaker that answers again. Run in a helper
// process, whose open-files limit it lowers.
func TestListenerDeadAfterFDExhaustion(t *testing.T) {
	runHelperTest(t, nil, "TestListenerDeadHelper", acceptHelperEnv, "listener_test.go")
}

// runHelperTest runs test name of this test binary in a child process
// (its command line after the words of prefix: ip netns exec NS), with
// env set to 1, for at most a minute; t fails unless it passed, and logs
// the lines of its output that contain mark.
func runHelperTest(t *testing.T, prefix []string, name, env, mark string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	argv := append(slices.Clip(prefix), os.Args[0], "-test.run=^"+name+"$", "-test.v", "-test.count=1")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, mark) {
			t.Log(strings.TrimSpace(l))
		}
	}
}

// TestListenerDeadHelper is TestListenerDeadAfterFDExhaustion's process.
func TestListenerDeadHelper(t *testing.T) {
	if os.Getenv(acceptHelperEnv) != "1" {
		t.Skip("run by TestListenerDeadAfterFDExhaustion")
	}
	lim := syscall.Rlimit{Cur: 256, Max: 256}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	reports := make(chan state.Action, 4)
	logs := &logBuf{}
	e := New(Options{ListenAddresses: []string{"127.0.0.1"}, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		GoBGPLevel: slog.LevelWarn, Report: func(a state.Action) { reports <- a }})
	defer e.Close()
	port := freePort(t, "127.0.0.1")
	srv := state.Server{ASN: 64512, RouterID: netip.MustParseAddr("127.0.0.1"), ListenPort: port}
	mustApply(t, e, effects.StartServer{Server: srv})
	if err := answered(port); err != nil {
		t.Fatalf("fresh speaker: %v", err)
	}

	// Fill every descriptor, free one for the dialling side, and connect:
	// GoBGP's accept gets EMFILE.
	var fill []*os.File
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		fill = append(fill, f)
	}
	fill[len(fill)-1].Close()
	fill = fill[:len(fill)-1]
	c, dialErr := net.DialTimeout("tcp4", net.JoinHostPort("127.0.0.1", itoa(port)), 2*time.Second)
	var got state.Action
	select {
	case got = <-reports:
	case <-time.After(15 * time.Second):
	}
	if c != nil {
		c.Close()
	}
	for _, f := range fill {
		f.Close()
	}
	if got == nil {
		t.Fatalf("no report after the flood (dial: %v); logs:\n%s", dialErr, logs.String())
	}
	failed, ok := got.(state.ServerApplyFailed)
	if !ok || failed.Server != srv || !strings.Contains(failed.Error, "stopped accepting") || !strings.Contains(failed.Error, "too many open files") {
		t.Fatalf("report %#v", got)
	}
	t.Logf("after the flood: %s", failed.Error)
	if err := answered(port); err == nil {
		t.Fatalf("the stopped speaker still answers")
	}
	// What the server retry does: StartServer with the same config.
	res := mustApply(t, e, effects.StartServer{Server: srv})
	if _, ok := res[0].(state.ServerApplied); !ok {
		t.Fatalf("restart: %v", res)
	}
	if err := answered(port); err != nil {
		t.Fatalf("restarted speaker: %v", err)
	}
	t.Logf("restarted speaker answers on port %d", port)
}
