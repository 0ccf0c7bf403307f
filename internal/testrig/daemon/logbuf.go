package daemon

import (
	"bytes"
	"sync"
)

// maxLog bounds what a LogBuffer keeps: a long test with debug logging must
// not grow memory without limit.
const maxLog = 4 << 20

// LogBuffer collects a process's output while tests read it, the last
// 4 MiB at most (beyond that it drops the older half). Its zero value is
// ready to use.
type LogBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	partial []byte // an unfinished last line
}

// Write appends p.
func (l *LogBuffer) Write(p []byte) (int, error) { return l.WriteLines(p, nil) }

// WriteLines is Write that also calls line, when not nil, with each line
// that p completes (without its newline), in order. The calls are
// serialized with every other Write: line runs under the buffer's lock, so
// it must not call the LogBuffer.
func (l *LogBuffer) WriteLines(p []byte, line func(string)) (int, error) {
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
		whole, rest, ok := bytes.Cut(l.partial, []byte("\n"))
		if !ok {
			break
		}
		if line != nil {
			line(string(whole))
		}
		l.partial = rest
	}
	l.partial = bytes.Clone(l.partial)
	return len(p), nil
}

// String is the output kept so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
