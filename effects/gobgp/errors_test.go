package gobgp

import (
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/osrg/gobgp/v3/pkg/log"
)

// TestKindOf uses GoBGP v3.37.0's own error texts.
func TestKindOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want errKind
	}{
		{"nil-is-other", nil, errOther},
		{"delete-absent-peer", errors.New("can't delete a peer configuration for 10.0.0.2"), errAbsent},
		{"update-absent-peer", errors.New("neighbor that has 10.0.0.2 doesn't exist"), errAbsent},
		{"absent-policy", errors.New("not found policy peeragent-10.0.0.2-import"), errAbsent},
		{"absent-defined-set", errors.New("not found defined-set: peeragent-10.0.0.2-neighbor"), errAbsent},
		{"server-not-started", errors.New("bgp server hasn't started yet"), errAbsent},
		{"existing-peer", errors.New("can't overwrite the existing peer: 10.0.0.2"), errExists},
		{"real-failure", errors.New("route-reflector-cluster-id should be specified as IPv4 address or 32-bit unsigned integer"), errOther},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := kindOf(tc.err); got != tc.want {
				t.Errorf("kindOf(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestRedactorScrubsEveryKnownPassword(t *testing.T) {
	r := newRedactor()
	r.remember(netip.MustParseAddr("10.0.0.2"), "abc")
	r.remember(netip.MustParseAddr("10.0.0.3"), "abcdef")
	got := r.scrub("keys abcdef and abc")
	if got != "keys [redacted] and [redacted]" {
		t.Errorf("scrub = %q", got)
	}
	r.remember(netip.MustParseAddr("10.0.0.3"), "")
	if got := r.scrub("abcdef"); got != "[redacted]def" {
		t.Errorf("after forgetting one password, scrub = %q", got)
	}
}

func TestGoBGPLogger(t *testing.T) {
	buf := &logBuf{}
	r := newRedactor()
	r.remember(netip.MustParseAddr("10.0.0.2"), "hunter2")
	l := newGoBGPLogger(slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), slog.LevelInfo, r)

	l.Debug("too chatty", log.Fields{"Key": "10.0.0.2"})
	l.Info("config hunter2 applied", log.Fields{"Key": "10.0.0.2", "Err": "bad key hunter2", "AuthPassword": "x"})
	l.Info("Peer Down", log.Fields{"Key": "10.0.0.2", "Reason": "hold-timer-expired"})

	out := buf.String()
	if strings.Contains(out, "too chatty") {
		t.Errorf("debug message passed an Info threshold:\n%s", out)
	}
	if strings.Contains(out, "hunter2") || !strings.Contains(out, "AuthPassword=[redacted]") {
		t.Errorf("password not scrubbed:\n%s", out)
	}
	if !strings.Contains(out, `msg="config [redacted] applied" AuthPassword=[redacted] Err="bad key [redacted]" Key=10.0.0.2`) {
		t.Errorf("fields not sorted or scrubbed:\n%s", out)
	}
	if got := l.reasons.take(netip.MustParseAddr("10.0.0.2")); got != "hold-timer-expired" {
		t.Errorf("reason = %q, want hold-timer-expired", got)
	}
	if got := l.reasons.take(netip.MustParseAddr("10.0.0.2")); got != "" {
		t.Errorf("reason taken twice: %q", got)
	}
	if l.GetLevel() != log.InfoLevel {
		t.Errorf("GetLevel = %v, want info", l.GetLevel())
	}
	l.SetLevel(log.DebugLevel)
	l.Debug("now wanted", nil)
	if !strings.Contains(buf.String(), "now wanted") {
		t.Errorf("SetLevel(debug) did not lower the threshold")
	}
}

func TestGoBGPLoggerPanicsOnFatal(t *testing.T) {
	l := newGoBGPLogger(slog.New(slog.NewTextHandler(&logBuf{}, nil)), slog.LevelInfo, newRedactor())
	defer func() {
		if recover() == nil {
			t.Errorf("Fatal returned")
		}
	}()
	l.Fatal("path's nlri is nil", nil)
}
