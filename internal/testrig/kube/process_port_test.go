package kube

import (
	"net"
	"strconv"
	"testing"
)

// TestStablePortBelowEphemeralRange: the port kube-apiserver keeps across
// restarts is never one the kernel hands out to outgoing connections.
func TestStablePortBelowEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	for range 20 {
		p, err := stablePort()
		if err != nil {
			t.Fatal(err)
		}
		if p >= low || p < 1024 {
			t.Fatalf("stable port %d, want below the ephemeral range (from %d)", p, low)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("stable port %d not free: %v", p, err)
		}
		l.Close()
	}
}
