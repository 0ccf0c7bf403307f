package state

import (
	"log/slog"
	"strings"
)

// LevelFatal is the slog level Calico's "Fatal" maps to: above Error, so
// that nothing the agent logs passes (it has no fatal messages).
const LevelFatal = slog.LevelError + 4

// LogLevel is the log level the BGPConfigurations ask of this node:
// logSeverityScreen of the configuration node.<this node> when it sets
// one, else of default (docs/semantics.md §1); ok is false when neither
// sets a level Calico knows (Debug, Info, Warning, Error, Fatal, in any
// case), and the command line's level then holds. Pure: the runner applies
// it (agent.LoopConfig.Published).
func (s State) LogLevel() (level slog.Level, ok bool) {
	for _, name := range []string{"node." + s.Node, "default"} {
		if c, found := s.Inputs.Configs.Get(name); found {
			if l, known := CalicoLogLevel(c.LogSeverityScreen); known {
				return l, true
			}
		}
	}
	return slog.LevelInfo, false
}

// CalicoLogLevel maps a Calico logSeverityScreen to a slog level; ok is
// false for "" and for a value Calico does not define.
func CalicoLogLevel(severity string) (slog.Level, bool) {
	switch strings.ToLower(strings.TrimSpace(severity)) {
	case "debug":
		return slog.LevelDebug, true
	case "info":
		return slog.LevelInfo, true
	case "warning", "warn":
		return slog.LevelWarn, true
	case "error":
		return slog.LevelError, true
	case "fatal":
		return LevelFatal, true
	}
	return slog.LevelInfo, false
}
