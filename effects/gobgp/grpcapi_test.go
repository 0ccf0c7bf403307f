package gobgp

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
)

// dialable reports whether something accepts TCP connections on addr.
func dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// TestGRPCAPIFollowsTheSpeaker: the API listens while a speaker runs,
// moves to the new speaker across a restart (the old one's listener
// closed, so the new one can bind), and closes with Close; the double
// stop that closes it logs no error.
func TestGRPCAPIFollowsTheSpeaker(t *testing.T) {
	requireLoopback(t, "127.0.0.1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	api := ln.Addr().String()
	ln.Close()
	logs := &logBuf{}
	e := New(Options{ListenAddresses: []string{"127.0.0.1"}, GRPCAddress: api, GoBGPLevel: slog.LevelInfo,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	defer e.Close()
	srv := (&speaker{addr: "127.0.0.1", port: freePort(t, "127.0.0.1")}).server(64512)
	if dialable(api) {
		t.Fatal("the API listens before the speaker starts")
	}
	mustApply(t, e, effects.StartServer{Server: srv})
	if !pollUntil(5*time.Second, func() bool { return dialable(api) }) {
		t.Fatalf("no API on %s after start:\n%s", api, logs.String())
	}
	moved := srv
	moved.ASN = 64600
	mustApply(t, e, effects.RestartServer{Old: srv, New: moved})
	if !pollUntil(5*time.Second, func() bool { return dialable(api) }) {
		t.Fatalf("no API on %s after a restart:\n%s", api, logs.String())
	}
	n := passiveNeighbor("10.0.0.2", 64513)
	mustApply(t, e, effects.AddPeer{Neighbor: n, Gen: 1})
	infos, err := e.Inspect(context.Background(), netip.Addr{}, false)
	if err != nil || len(infos) != 1 || infos[0].Address != n.Address || infos[0].Advertised != nil ||
		infos[0].HoldTime != 90 || infos[0].KeepaliveInterval != 30 {
		t.Errorf("Inspect = %+v, %v", infos, err)
	}
	one, err := e.Inspect(context.Background(), n.Address, true)
	if err != nil || len(one) != 1 || one[0].Advertised == nil || *one[0].Advertised != 0 {
		t.Errorf("Inspect(%s, advertised) = %+v, %v", n.Address, one, err)
	}
	if none, err := e.Inspect(context.Background(), netip.MustParseAddr("10.0.0.3"), true); err != nil || len(none) != 0 {
		t.Errorf("Inspect of an absent neighbor = %+v, %v", none, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if !pollUntil(5*time.Second, func() bool { return !dialable(api) }) {
		t.Error("the API still listens after Close")
	}
	if infos, err := e.Inspect(context.Background(), netip.Addr{}, false); err != nil || len(infos) != 0 {
		t.Errorf("Inspect of a stopped speaker = %+v, %v", infos, err)
	}
	for _, bad := range []string{"level=ERROR", "listen failed", "failed to listen"} {
		if strings.Contains(logs.String(), bad) {
			t.Errorf("logs hold %q:\n%s", bad, logs.String())
		}
	}
}
