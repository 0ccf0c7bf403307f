package gobgp

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
)

// scrubHandler is the slog.Handler GoBGP v4 logs through (its
// LoggerOption takes a *slog.Logger and a *slog.LevelVar). It passes
// GoBGP's records on to the agent's handler with every password the
// executor handed to GoBGP scrubbed from the message and from every
// attribute, and attributes named like a password dropped to
// "[redacted]". Records below level are dropped before GoBGP builds their
// attributes: GoBGP guards its costly debug lines with Enabled. Warnings
// are always taken, whatever the level, when refused or acceptFailed is
// set, for them to see GoBGP's refusal of a TCP-MD5 key (keyrefusal.go)
// and the end of its accept loop (listener.go).
type scrubHandler struct {
	next    slog.Handler
	level   *slog.LevelVar
	secrets *redactor
	refused *keyRefusals // nil: no one is told
	// acceptFailed, if set, is told GoBGP's accept loop ended (listener.go).
	acceptFailed func(why string)
}

func newScrubHandler(next slog.Handler, level *slog.LevelVar, secrets *redactor) *scrubHandler {
	return &scrubHandler{next: next, level: level, secrets: secrets}
}

func (h *scrubHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.passes(ctx, l) || (h.refused != nil || h.acceptFailed != nil) && l >= slog.LevelWarn
}

func (h *scrubHandler) passes(ctx context.Context, l slog.Level) bool {
	return l >= h.level.Level() && h.next.Enabled(ctx, l)
}

func (h *scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.refused != nil {
		h.refused.observe(r, h.secrets.scrub)
	}
	if h.acceptFailed != nil && r.Message == gobgpAcceptFailed {
		h.acceptFailed(h.secrets.scrub(attrText(r, "Error")))
	}
	if !h.passes(ctx, r.Level) {
		return nil
	}
	out := slog.NewRecord(r.Time, r.Level, h.secrets.scrub(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *scrubHandler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = h.attr(a)
	}
	return &scrubHandler{next: h.next.WithAttrs(clean), level: h.level, secrets: h.secrets, refused: h.refused, acceptFailed: h.acceptFailed}
}

func (h *scrubHandler) WithGroup(name string) slog.Handler {
	return &scrubHandler{next: h.next.WithGroup(name), level: h.level, secrets: h.secrets, refused: h.refused, acceptFailed: h.acceptFailed}
}

// attr scrubs one attribute, groups included. Every value is turned into
// its text first, so that a password inside a struct GoBGP logs (a peer
// config) cannot pass through a formatter we do not control.
func (h *scrubHandler) attr(a slog.Attr) slog.Attr {
	if k := strings.ToLower(a.Key); strings.Contains(k, "password") || strings.Contains(k, "auth") {
		return slog.String(a.Key, "[redacted]")
	}
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		g := v.Group()
		clean := make([]any, len(g))
		for i, x := range g {
			clean[i] = h.attr(x)
		}
		return slog.Group(a.Key, clean...)
	}
	return slog.String(a.Key, h.secrets.scrub(v.String()))
}

// reasonBook holds, per neighbor, the reason the executor gave itself for
// a session reset it is about to cause ("reconfigured: password"), until
// the session watch reports the drop. GoBGP's own reason (v4 peer events
// carry it) is used when the executor has none.
type reasonBook struct {
	mu sync.Mutex
	m  map[netip.Addr]string
}

func newReasonBook() *reasonBook { return &reasonBook{m: map[netip.Addr]string{}} }

// expect records why the executor is about to reset a's session.
func (b *reasonBook) expect(a netip.Addr, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.m[a] = reason
}

// take returns and forgets the reason noted for a.
func (b *reasonBook) take(a netip.Addr) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.m[a]
	delete(b.m, a)
	return r
}

// forget drops a reason that no longer applies (the session came back).
func (b *reasonBook) forget(a netip.Addr) { b.take(a) }
