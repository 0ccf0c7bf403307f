package frrtest

import (
	"bytes"
	"slices"
	"strings"
	"sync"
)

// maxLog bounds what logBuffer keeps: a long test with debug logging must
// not grow memory without limit.
const maxLog = 4 << 20

// configErrorMark is in the line bgpd logs for each config file line it
// could not apply ("No such command on config line 4: ..."); bgpd goes on
// running without it.
const configErrorMark = " on config line "

// logBuffer collects bgpd's output (the process writes while tests read)
// and keeps every config error line, which the size bound must not drop.
type logBuffer struct {
	mu           sync.Mutex
	buf          bytes.Buffer
	partial      []byte // an unfinished last line
	configErrors []string
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
		if s := string(line); strings.Contains(s, configErrorMark) {
			l.configErrors = append(l.configErrors, strings.TrimSpace(s))
		}
		l.partial = rest
	}
	l.partial = bytes.Clone(l.partial)
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// errors are the config error lines logged so far.
func (l *logBuffer) errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.configErrors)
}
