package gobgp

import (
	"context"
	"net"
	"net/netip"
	"strings"
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
	if !ok || !strings.Contains(failed.Error, "address already in use") {
		t.Fatalf("with the port taken: %#v, want ServerApplyFailed naming the port", res[0])
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
