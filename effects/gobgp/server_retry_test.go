package gobgp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// TestStartServerRetriesAfterPortIsFree: a StartServer that fails because
// the listen port is taken reports ServerApplyFailed, leaves nothing half
// open, and the same effect succeeds once the port is free (the loop
// re-issues it on a server RetryDue).
func TestStartServerRetriesAfterPortIsFree(t *testing.T) {
	blocker, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(blocker.Addr().(*net.TCPAddr).Port)
	e := New(Options{ListenAddresses: []string{"127.0.0.1"}})
	defer e.Close()
	srv := state.Server{ASN: 64512, RouterID: netip.MustParseAddr("127.0.0.1"), ListenPort: port}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	res := e.Execute(ctx, []effects.Effect{effects.StartServer{Server: srv}})
	if len(res) != 1 {
		t.Fatalf("results = %v, want one", res)
	}
	failed, ok := res[0].(state.ServerApplyFailed)
	if !ok || !failed.OtherSpeaker || !strings.Contains(failed.Error, "another BGP speaker holds port "+fmt.Sprint(port)+": a listener answers on 127.0.0.1:") {
		t.Fatalf("with the port taken: %#v, want ServerApplyFailed naming the other speaker", res[0])
	}
	blocker.Close()
	res = e.Execute(ctx, []effects.Effect{effects.StartServer{Server: srv}})
	if len(res) != 1 {
		t.Fatalf("results = %v, want one", res)
	}
	if _, ok := res[0].(state.ServerApplied); !ok {
		t.Fatalf("with the port free: %#v, want ServerApplied", res[0])
	}
}

// TestStartServerRefusesABoundPort: a socket bound to the port but not
// listening (no answer to a connection) still makes the bind fail: the
// same one problem, naming the port, and nothing half open.
func TestStartServerRefusesABoundPort(t *testing.T) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(sa.(*syscall.SockaddrInet4).Port)
	e := New(Options{ListenAddresses: []string{"127.0.0.1"}})
	defer e.Close()
	srv := state.Server{ASN: 64512, RouterID: netip.MustParseAddr("127.0.0.1"), ListenPort: port}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res := e.Execute(ctx, []effects.Effect{effects.StartServer{Server: srv}})
	failed, ok := res[0].(state.ServerApplyFailed)
	if !ok || !failed.OtherSpeaker || !strings.Contains(failed.Error, fmt.Sprintf("another BGP speaker holds port %d: listen tcp4 127.0.0.1:%d: bind: address already in use", port, port)) {
		t.Fatalf("with the port bound: %#v, want the other speaker's problem naming the port", res)
	}
	t.Logf("ServerApplyFailed: %s", failed.Error)
}
