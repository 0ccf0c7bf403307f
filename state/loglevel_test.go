package state

import (
	"log/slog"
	"testing"
)

func TestLogLevel(t *testing.T) {
	cases := []struct {
		name    string
		configs map[string]string
		want    slog.Level
		ok      bool
	}{
		{"none", nil, slog.LevelInfo, false},
		{"default-only", map[string]string{"default": "Debug"}, slog.LevelDebug, true},
		{"node-wins", map[string]string{"default": "Debug", "node.n": "Warning"}, slog.LevelWarn, true},
		{"other-node-ignored", map[string]string{"default": "Error", "node.m": "Debug"}, slog.LevelError, true},
		{"node-unset-falls-back", map[string]string{"default": "Info", "node.n": ""}, slog.LevelInfo, true},
		{"unknown-ignored", map[string]string{"default": "Verbose"}, slog.LevelInfo, false},
		{"case-insensitive-fatal", map[string]string{"default": "FATAL"}, LevelFatal, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New("n", Options{})
			for name, sev := range c.configs {
				s.Inputs.Configs = s.Inputs.Configs.Set(name, &BGPConfiguration{Name: name, LogSeverityScreen: sev})
			}
			got, ok := s.LogLevel()
			if got != c.want || ok != c.ok {
				t.Errorf("LogLevel() = %v, %v; want %v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}
