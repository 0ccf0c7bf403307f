package gobgp

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/osrg/gobgp/v3/pkg/log"
)

// gobgpLogger adapts GoBGP's logger interface (pkg/log.Logger) to slog.
// Besides passing messages on, it does two things GoBGP's API cannot:
//   - it keeps the reason of each "Peer Down" (GoBGP's peer events carry
//     no reason; its log line does, and is written before the event);
//   - it scrubs every password the executor handed to GoBGP from messages
//     and fields, and drops fields named like a password.
type gobgpLogger struct {
	out     *slog.Logger
	min     atomic.Int64 // slog.Level: lower GoBGP messages are dropped
	secrets *redactor
	reasons *reasonBook
}

var _ log.Logger = (*gobgpLogger)(nil)

func newGoBGPLogger(out *slog.Logger, min slog.Level, secrets *redactor) *gobgpLogger {
	l := &gobgpLogger{out: out, secrets: secrets, reasons: &reasonBook{m: map[netip.Addr]downReason{}}}
	l.min.Store(int64(min))
	return l
}

func (l *gobgpLogger) Panic(msg string, f log.Fields) {
	l.emit(slog.LevelError, msg, f)
	panic("gobgp: " + l.secrets.scrub(msg))
}

// Fatal panics rather than exiting: GoBGP's code after a Fatal assumes it
// does not return, and a panic still runs deferred cleanup and shows in tests.
func (l *gobgpLogger) Fatal(msg string, f log.Fields) {
	l.emit(slog.LevelError, msg, f)
	panic("gobgp fatal: " + l.secrets.scrub(msg))
}

func (l *gobgpLogger) Error(msg string, f log.Fields) { l.emit(slog.LevelError, msg, f) }
func (l *gobgpLogger) Warn(msg string, f log.Fields)  { l.emit(slog.LevelWarn, msg, f) }
func (l *gobgpLogger) Info(msg string, f log.Fields)  { l.emit(slog.LevelInfo, msg, f) }
func (l *gobgpLogger) Debug(msg string, f log.Fields) { l.emit(slog.LevelDebug, msg, f) }

// SetLevel is called by GoBGP's SetLogLevel API.
func (l *gobgpLogger) SetLevel(level log.LogLevel) {
	var s slog.Level
	switch {
	case level >= log.DebugLevel:
		s = slog.LevelDebug
	case level == log.InfoLevel:
		s = slog.LevelInfo
	case level == log.WarnLevel:
		s = slog.LevelWarn
	default:
		s = slog.LevelError
	}
	l.min.Store(int64(s))
}

// GetLevel tells GoBGP which messages are wanted, so that it skips
// building the debug ones it guards with a level check.
func (l *gobgpLogger) GetLevel() log.LogLevel {
	switch s := slog.Level(l.min.Load()); {
	case s <= slog.LevelDebug:
		return log.DebugLevel
	case s <= slog.LevelInfo:
		return log.InfoLevel
	case s <= slog.LevelWarn:
		return log.WarnLevel
	default:
		return log.ErrorLevel
	}
}

func (l *gobgpLogger) emit(level slog.Level, msg string, f log.Fields) {
	if msg == "Peer Down" {
		l.reasons.note(f)
	}
	if level < slog.Level(l.min.Load()) || !l.out.Enabled(context.Background(), level) {
		return
	}
	l.out.LogAttrs(context.Background(), level, l.secrets.scrub(msg), l.attrs(f)...)
}

// attrs turns GoBGP's fields into attributes, sorted by key so that log
// lines are stable.
func (l *gobgpLogger) attrs(f log.Fields) []slog.Attr {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		v := l.secrets.scrub(fmt.Sprint(f[k]))
		if lk := strings.ToLower(k); strings.Contains(lk, "password") || strings.Contains(lk, "auth") {
			v = "[redacted]"
		}
		out = append(out, slog.String(k, v))
	}
	return out
}

// reasonBook holds, per neighbor, the reason of the last session drop
// until the session watch takes it: the executor's own ("reconfigured:
// password", noted before it makes GoBGP reset a session) or else the one
// GoBGP logged. GoBGP logs the old session's end ("dying") concurrently
// with the event of the new one, so it never overrides the executor's.
type reasonBook struct {
	mu sync.Mutex
	m  map[netip.Addr]downReason
}

type downReason struct {
	text string
	ours bool
}

func (b *reasonBook) note(f log.Fields) {
	key, _ := f["Key"].(string)
	reason, _ := f["Reason"].(string)
	a, err := netip.ParseAddr(key)
	if err != nil || reason == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.m[a.Unmap()].ours {
		b.m[a.Unmap()] = downReason{text: reason}
	}
}

// expect records why the executor is about to reset a's session.
func (b *reasonBook) expect(a netip.Addr, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.m[a] = downReason{text: reason, ours: true}
}

// take returns and forgets the reason noted for a.
func (b *reasonBook) take(a netip.Addr) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.m[a]
	delete(b.m, a)
	return r.text
}

// forget drops a reason that no longer applies (the session came back).
func (b *reasonBook) forget(a netip.Addr) { b.take(a) }
