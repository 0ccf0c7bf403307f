package gobgp

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/loglimit"
	"github.com/peeragent/peeragent/state"
)

// portTakenLines runs 20 attempts to start the speaker on a taken port
// with 3 neighbors (what the server retry makes of it) and returns the
// log lines, through the agent's log limiter or not.
func portTakenLines(t *testing.T, limited bool) []string {
	blocker, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close()
	logs := &logBuf{}
	var h slog.Handler = slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})
	if limited {
		h = loglimit.New(h, loglimit.Options{})
	}
	e := New(Options{ListenAddresses: []string{"127.0.0.1"}, Logger: slog.New(h), GoBGPLevel: slog.LevelWarn})
	defer e.Close()
	srv := state.Server{ASN: 64512, RouterID: netip.MustParseAddr("127.0.0.1"), ListenPort: uint16(blocker.Addr().(*net.TCPAddr).Port)}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 20 {
		effs := []effects.Effect{effects.StartServer{Server: srv}}
		for i := range 3 {
			n := &state.Neighbor{Address: netip.MustParseAddr(fmt.Sprintf("127.0.0.%d", 50+i)), Port: 179,
				PeerASN: 64513, LocalASN: 64512, Families: []string{"ipv4-unicast"}}
			effs = append(effs, effects.AddPeer{Neighbor: n, Gen: 1})
		}
		e.Execute(ctx, effs)
	}
	s := strings.TrimSpace(logs.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// TestPortTakenLogBounded: a BGP port another process holds fails every
// server retry and every neighbor's call; through the agent's log limiter
// (internal/loglimit, the process's logger) that is a few lines per
// message, not a few per attempt (docs/routes.md §9.7 rule 3).
func TestPortTakenLogBounded(t *testing.T) {
	plain, limited := portTakenLines(t, false), portTakenLines(t, true)
	t.Logf("20 attempts, 3 neighbors, port taken: %d lines plain, %d through the limiter", len(plain), len(limited))
	if len(plain) < 20 {
		t.Fatalf("only %d lines without the limiter: the attack did not happen:\n%s", len(plain), strings.Join(plain, "\n"))
	}
	if len(limited) > 12 {
		t.Errorf("%d lines through the limiter, want at most 12:\n%s", len(limited), strings.Join(limited, "\n"))
	}
}
