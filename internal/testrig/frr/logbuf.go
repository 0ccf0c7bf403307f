package frr

import (
	"slices"
	"strings"
	"sync"

	"github.com/peeragent/peeragent/internal/testrig/daemon"
)

// configErrorMark is in the line bgpd logs for each config file line it
// could not apply ("No such command on config line 4: ..."); bgpd goes on
// running without it.
const configErrorMark = " on config line "

// logBuffer collects bgpd's output (the process writes while tests read),
// the last 4 MiB at most, and keeps every config error line, which the
// size bound must not drop.
type logBuffer struct {
	out daemon.LogBuffer

	mu           sync.Mutex // guards configErrors
	configErrors []string
}

func (l *logBuffer) Write(p []byte) (int, error) { return l.out.WriteLines(p, l.scan) }

func (l *logBuffer) String() string { return l.out.String() }

func (l *logBuffer) scan(line string) {
	if !strings.Contains(line, configErrorMark) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.configErrors = append(l.configErrors, strings.TrimSpace(line))
}

// errors are the config error lines logged so far.
func (l *logBuffer) errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.configErrors)
}
