package gobgp

import (
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
)

// TestKindOf uses GoBGP v4.8.0's own error texts (the same as v3.37.0's).
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

func TestScrubHandler(t *testing.T) {
	buf := &logBuf{}
	r := newRedactor()
	r.remember(netip.MustParseAddr("10.0.0.2"), "hunter2")
	level := new(slog.LevelVar)
	level.Set(slog.LevelInfo)
	l := slog.New(newScrubHandler(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}), level, r))

	l.Debug("too chatty", slog.String("Key", "10.0.0.2"))
	l.Info("config hunter2 applied", slog.String("Key", "10.0.0.2"), slog.String("Err", "bad key hunter2"), slog.String("AuthPassword", "x"))
	l.With(slog.String("Topic", "hunter2")).WithGroup("g").Info("grouped", slog.Group("peer", slog.Any("conf", struct{ P string }{"hunter2"})))

	out := buf.String()
	if strings.Contains(out, "too chatty") {
		t.Errorf("debug message passed an Info threshold:\n%s", out)
	}
	if strings.Contains(out, "hunter2") || !strings.Contains(out, "AuthPassword=[redacted]") {
		t.Errorf("password not scrubbed:\n%s", out)
	}
	if !strings.Contains(out, `msg="config [redacted] applied" Key=10.0.0.2 Err="bad key [redacted]" AuthPassword=[redacted]`) {
		t.Errorf("fields not kept in order or not scrubbed:\n%s", out)
	}
	level.Set(slog.LevelDebug)
	l.Debug("now wanted")
	if !strings.Contains(buf.String(), "now wanted") {
		t.Errorf("lowering the level var did not lower the threshold")
	}
}

func TestReasonBook(t *testing.T) {
	b := newReasonBook()
	a := netip.MustParseAddr("10.0.0.2")
	b.expect(a, "reconfigured: password")
	if got := b.take(a); got != "reconfigured: password" {
		t.Errorf("reason = %q", got)
	}
	if got := b.take(a); got != "" {
		t.Errorf("reason taken twice: %q", got)
	}
}
