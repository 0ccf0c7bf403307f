package gobgp

import (
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// TestServerListensOnNodeAddressesUnderBindModeNodeIP: a server with
// ListenAddresses (bindMode NodeIP, docs/semantics.md §1) accepts
// connections on those addresses only, whatever --bgp-listen-address
// says; restarted without them, it listens as the flag says again.
func TestServerListensOnNodeAddressesUnderBindModeNodeIP(t *testing.T) {
	const flagAddr, nodeAddr = "127.0.0.1", "127.0.0.73"
	logs := &logBuf{}
	e := New(Options{ListenAddresses: []string{flagAddr}, Logger: slog.New(slog.NewTextHandler(logs, nil)), GoBGPLevel: slog.LevelWarn})
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	port := freePort(t, nodeAddr)
	l, err := net.Listen("tcp4", net.JoinHostPort(flagAddr, strconv.Itoa(int(port)))) // free on both
	if err != nil {
		t.Skipf("port %d not free on %s: %v", port, flagAddr, err)
	}
	l.Close()
	bound := state.Server{ASN: 64512, RouterID: netip.MustParseAddr(nodeAddr), ListenPort: port,
		ListenAddresses: [2]netip.Addr{netip.MustParseAddr(nodeAddr)}}
	mustApply(t, e, effects.StartServer{Server: bound, Gen: 1})
	checkListening(t, nodeAddr, port, true)
	checkListening(t, flagAddr, port, false)

	all := bound
	all.ListenAddresses = [2]netip.Addr{}
	mustApply(t, e, effects.RestartServer{Old: bound, New: all, Gen: 2})
	checkListening(t, flagAddr, port, true)
	checkListening(t, nodeAddr, port, false)
}

func checkListening(t *testing.T, addr string, port uint16, want bool) {
	t.Helper()
	c, err := net.DialTimeout("tcp4", net.JoinHostPort(addr, strconv.Itoa(int(port))), 2*time.Second)
	if err == nil {
		c.Close()
	}
	if got := err == nil; got != want {
		t.Errorf("listening on %s:%d: %v, want %v (dial: %v)", addr, port, got, want, err)
	}
}
