package bird

import (
	"strings"
	"sync"

	"github.com/peeragent/peeragent/internal/testrig/daemon"
)

// establishedSuffix ends the line BIRD logs (with "debug protocols
// {events}") each time a BGP session enters Established:
// "2026-01-02 15:04:05.000 <TRACE> NAME: BGP session established".
const establishedSuffix = ": BGP session established"

// logBuffer collects BIRD's output (the process writes while tests read),
// the last 4 MiB at most, and counts session establishments per protocol,
// whole lines only.
type logBuffer struct {
	out daemon.LogBuffer

	mu          sync.Mutex // guards established
	established map[string]int
}

func (l *logBuffer) Write(p []byte) (int, error) { return l.out.WriteLines(p, l.count) }

func (l *logBuffer) String() string { return l.out.String() }

func (l *logBuffer) count(line string) {
	head, ok := strings.CutSuffix(strings.TrimSpace(line), establishedSuffix)
	if !ok {
		return
	}
	f := strings.Fields(head)
	if len(f) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.established == nil {
		l.established = map[string]int{}
	}
	l.established[f[len(f)-1]]++
}

func (l *logBuffer) establishedCount(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.established[name]
}
