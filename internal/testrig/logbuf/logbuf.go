// Package logbuf is a log sink for tests whose code under test logs from
// goroutines of its own (GoBGP's outlive the test, so nothing may go to
// t.Log directly): a bytes.Buffer safe for concurrent use, read when the
// test checks or fails.
package logbuf

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is an io.Writer safe for concurrent use; the zero value is empty.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines is everything written so far, one line each (nil: nothing).
func (b *Buffer) Lines() []string {
	s := strings.TrimSpace(b.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
