package wait

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// fatal is a testing.TB whose Fatalf records the message and ends only the
// calling goroutine.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestUntil(t *testing.T) {
	n := 0
	Until(t, "three calls", time.Second, func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("cond called %d times, want 3", n)
	}
	f := &fatal{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Until(f, "never", 20*time.Millisecond, func() bool { return false })
	}()
	<-done
	if f.msg != "timed out after 20ms waiting for never" {
		t.Errorf("Until said %q", f.msg)
	}
}
