package loglimit

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTest(t *testing.T) (*slog.Logger, *bytes.Buffer, *clock) {
	t.Helper()
	var buf bytes.Buffer
	c := &clock{t: time.Unix(1000, 0)}
	h := New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), Options{Burst: 2, Window: time.Minute, Now: c.now})
	return slog.New(h), &buf, c
}

func lines(b *bytes.Buffer) []string {
	s := strings.TrimSpace(b.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestLimit(t *testing.T) {
	cases := []struct {
		name string
		run  func(l *slog.Logger, c *clock)
		want []string // substrings, one per line in order
	}{
		{"one-key-20000-prefixes-burst-only", func(l *slog.Logger, c *clock) {
			for i := range 20000 {
				l.Warn("kernel route failed", "error", fmt.Sprintf("replace route 10.9.%d.%d/32: network is unreachable", i/256, i%256))
			}
		}, []string{"10.9.0.0/32", "10.9.0.1/32"}},
		{"next-window-says-how-many-were-suppressed", func(l *slog.Logger, c *clock) {
			for range 10 {
				l.Warn("bgp port taken")
			}
			c.t = c.t.Add(time.Minute)
			l.Warn("bgp port taken")
		}, []string{"port taken", "port taken", "suppressed=8"}},
		{"neighbors-are-separate-keys", func(l *slog.Logger, c *clock) {
			for _, a := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"} {
				for range 5 {
					l.Warn("peer apply failed", "address", a)
				}
			}
		}, []string{"10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.2", "10.0.0.3", "10.0.0.3"}},
		{"with-attrs-share-the-limit-and-key", func(l *slog.Logger, c *clock) {
			for range 5 {
				l.With("neighbor", "10.0.0.9").Warn("x")
			}
		}, []string{"neighbor=10.0.0.9", "neighbor=10.0.0.9"}},
		{"info-and-debug-are-not-limited", func(l *slog.Logger, c *clock) {
			for range 4 {
				l.Info("session")
			}
		}, []string{"session", "session", "session", "session"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, buf, c := newTest(t)
			tc.run(l, c)
			got := lines(buf)
			if len(got) != len(tc.want) {
				t.Fatalf("%d lines, want %d:\n%s", len(got), len(tc.want), buf)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("line %d %q lacks %q", i, got[i], w)
				}
			}
		})
	}
}

func TestKeysBounded(t *testing.T) {
	l, buf, _ := newTest(t)
	for i := range 3 * MaxKeys {
		l.Warn("x", "address", fmt.Sprint(i))
	}
	h := l.Handler().(*Handler)
	if n := len(h.st.keys); n > MaxKeys+1 {
		t.Errorf("%d keys kept, want at most %d", n, MaxKeys+1)
	}
	if n := len(lines(buf)); n > 2*MaxKeys+2 {
		t.Errorf("%d lines, want at most %d", n, 2*MaxKeys+2)
	}
}
