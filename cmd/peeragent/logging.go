package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/peeragent/peeragent/internal/loglimit"
	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// newLogger makes the process's logger: text or JSON lines on w, at a
// level that the BGPConfigurations may change while running (the returned
// LevelVar, driven by levelFollower).
func newLogger(level, format string, w io.Writer) (*slog.Logger, *slog.LevelVar, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	v := new(slog.LevelVar)
	v.Set(l)
	opts := &slog.HandlerOptions{Level: v}
	// Warnings and errors are deduplicated per key with a rate limit
	// (internal/loglimit): a cause repeated for every route or every
	// retry (a BGP port another process holds) is a few lines a minute.
	limited := func(h slog.Handler) *slog.Logger { return slog.New(loglimit.New(h, loglimit.Options{})) }
	switch format {
	case "text", "":
		return limited(slog.NewTextHandler(w, opts)), v, nil
	case "json":
		return limited(slog.NewJSONHandler(w, opts)), v, nil
	}
	return nil, nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// gobgpLevel is the level of GoBGP's own messages for an agent level:
// the same, except that at Info GoBGP keeps to warnings (its Info is a line
// per peer change, thousands at start-up with a large mesh).
func gobgpLevel(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelWarn
	}
	return l
}

// levelFollower applies State's log level (state.State.LogLevel: the
// logSeverityScreen of node.<this node>, else of default, else the
// --log-level flag) to the agent's logger and to GoBGP's.
//
// It is an observer of published State (agent.LoopConfig.Published), not
// an effect: the level is a setting of this process, not of a daemon;
// setting it cannot fail and has no result to report back, so it needs
// neither an Action nor a generation nor a retry, and an Effect kind would
// put it in every golden and plan for nothing. Applying it twice is a
// no-op, and it is applied only when the level changes.
type levelFollower struct {
	flag  slog.Level
	v     *slog.LevelVar // the logger's; nil: leave it
	gobgp func(slog.Level)
	log   *slog.Logger
	cur   slog.Level
	from  string
	// configs are the configurations observed last: the level is theirs,
	// so a State with the same ones (most steps) is not looked at again.
	configs *pmap.Map[*state.BGPConfiguration]
	seen    bool
}

func newLevelFollower(flag slog.Level, v *slog.LevelVar, gobgp func(slog.Level), log *slog.Logger) *levelFollower {
	return &levelFollower{flag: flag, v: v, gobgp: gobgp, log: log, cur: flag, from: "--log-level"}
}

func (f *levelFollower) observe(s state.State) {
	if f.seen && s.Inputs.Configs == f.configs {
		return
	}
	f.configs, f.seen = s.Inputs.Configs, true
	l, ok := s.LogLevel()
	from := "BGPConfiguration logSeverityScreen"
	if !ok {
		l, from = f.flag, "--log-level"
	}
	if l == f.cur && from == f.from {
		return
	}
	// Logged before the change at the old level's lowest passing level,
	// so that the line shows whether the level goes up or down.
	f.log.Log(context.Background(), max(f.cur, slog.LevelInfo), "log level", "level", levelName(l), "from", from)
	f.cur, f.from = l, from
	if f.v != nil {
		f.v.Set(l)
	}
	if f.gobgp != nil {
		f.gobgp(gobgpLevel(l))
	}
}

func levelName(l slog.Level) string {
	if l == state.LevelFatal {
		return "FATAL"
	}
	return l.String()
}
