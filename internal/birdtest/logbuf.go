package birdtest

import (
	"bytes"
	"strings"
	"sync"
)

// maxLog bounds what logBuffer keeps: a long test with debug logging must
// not grow memory without limit.
const maxLog = 4 << 20

// establishedSuffix ends the line BIRD logs (with "debug protocols
// {events}") each time a BGP session enters Established:
// "2026-01-02 15:04:05.000 <TRACE> NAME: BGP session established".
const establishedSuffix = ": BGP session established"

// logBuffer collects BIRD's output (the process writes while tests read)
// and counts session establishments per protocol, whole lines only.
type logBuffer struct {
	mu          sync.Mutex
	buf         bytes.Buffer
	partial     []byte // an unfinished last line
	established map[string]int
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if l.buf.Len() > maxLog {
		keep := bytes.Clone(l.buf.Bytes()[l.buf.Len()-maxLog/2:])
		l.buf.Reset()
		l.buf.WriteString("[earlier output dropped]\n")
		l.buf.Write(keep)
	}
	l.partial = append(l.partial, p...)
	for {
		line, rest, ok := bytes.Cut(l.partial, []byte("\n"))
		if !ok {
			break
		}
		l.count(string(line))
		l.partial = rest
	}
	l.partial = bytes.Clone(l.partial)
	return len(p), nil
}

func (l *logBuffer) count(line string) {
	head, ok := strings.CutSuffix(strings.TrimSpace(line), establishedSuffix)
	if !ok {
		return
	}
	f := strings.Fields(head)
	if len(f) == 0 {
		return
	}
	if l.established == nil {
		l.established = map[string]int{}
	}
	l.established[f[len(f)-1]]++
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) establishedCount(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.established[name]
}
