package loglimit

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Defaults: a key logs at most Burst lines a Window.
const (
	DefaultBurst  = 3
	DefaultWindow = time.Minute
	// MaxKeys bounds the memory of the limiter: keys beyond it share one.
	MaxKeys = 1024
)

// keyAttrs are the attributes that tell the subjects of one message
// apart: a neighbor, in the names the agent and GoBGP give it.
var keyAttrs = map[string]bool{"address": true, "neighbor": true, "Key": true, "Topic": true}

// Options tune a Handler; the zero value takes the defaults.
type Options struct {
	Burst  int
	Window time.Duration
	Now    func() time.Time // the clock, for tests
}

// Handler limits the records of next; see the package doc.
type Handler struct {
	next  slog.Handler
	attrs []slog.Attr // the WithAttrs of this handler, part of the key
	st    *shared
}

type shared struct {
	burst  int
	window time.Duration
	now    func() time.Time
	mu     sync.Mutex
	keys   map[key]*count
}

type key struct {
	level slog.Level
	msg   string
	subj  string
}

type count struct {
	start      time.Time // of the current window
	passed     int       // in the current window
	suppressed int       // since the last record that passed
}

// New wraps next.
func New(next slog.Handler, o Options) *Handler {
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Handler{next: next, st: &shared{burst: o.Burst, window: o.Window, now: o.Now, keys: map[key]*count{}}}
}

// Enabled is next's.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle passes r on unless its key has used its Burst in this Window.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	n, ok := h.st.admit(h.keyOf(r))
	if !ok {
		return nil
	}
	if n > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("suppressed", n))
	}
	return h.next.Handle(ctx, r)
}

func (h *Handler) keyOf(r slog.Record) key {
	k := key{level: r.Level, msg: r.Message}
	add := func(a slog.Attr) bool {
		if keyAttrs[a.Key] {
			k.subj += a.Key + "=" + a.Value.String() + " "
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	return k
}

// admit reports whether a record of k passes, and how many of k were
// suppressed since the last one that did.
func (s *shared) admit(k key) (int, bool) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.keys[k]
	if c == nil {
		if len(s.keys) >= MaxKeys {
			k = key{level: k.level, msg: "(other)"}
			c = s.keys[k]
		}
		if c == nil {
			c = &count{start: now}
			s.keys[k] = c
		}
	}
	if now.Sub(c.start) >= s.window {
		c.start, c.passed = now, 0
	}
	if c.passed >= s.burst {
		c.suppressed++
		return 0, false
	}
	c.passed++
	n := c.suppressed
	c.suppressed = 0
	return n, true
}

// WithAttrs keeps the limit shared with h.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(as), attrs: append(append([]slog.Attr(nil), h.attrs...), as...), st: h.st}
}

// WithGroup keeps the limit shared with h.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), attrs: h.attrs, st: h.st}
}
