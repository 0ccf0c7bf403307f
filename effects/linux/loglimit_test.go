package linux

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// lockedBuf is a log sink the executor may write to from any goroutine.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSpace(l.b.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// TestBrokenRoutesLogBounded attacks the executor (docs/routes.md §9.7
// rule 3): many learned routes whose next hop is not on-link, each
// failing at every retry, used to log a WARN line per route per attempt
// (2,000 routes x 3 attempts: 6,000 lines here; 20,000 routes: ~330 MB of
// log an hour). Every route still fails as data (a result each), but the
// log holds at most loglimit.DefaultBurst lines for them.
func TestBrokenRoutesLogBounded(t *testing.T) {
	n := newNS(t)
	var sink lockedBuf
	e := New(n.h, Options{Logger: slog.New(slog.NewTextHandler(&sink, nil))})
	const routes, attempts = 2000, 3
	var effs []effects.Effect
	for i := range routes {
		r := route(fmt.Sprintf("10.%d.%d.0/24 via 192.0.2.9", 100+i/256, i%256))
		effs = append(effs, effects.ReplaceRoute{Route: r, Gen: uint64(i + 1)})
	}
	failed := 0
	for range attempts {
		for _, a := range e.Execute(context.Background(), effs) {
			if _, ok := a.(state.TableRouteApplyFailed); ok {
				failed++
			}
		}
	}
	if failed != routes*attempts {
		t.Errorf("%d failed results, want %d (one per route per attempt)", failed, routes*attempts)
	}
	got := sink.lines()
	t.Logf("%d routes x %d attempts not on-link: %d log lines", routes, attempts, len(got))
	if len(got) == 0 || len(got) > 3 {
		t.Errorf("%d log lines for %d failures, want 1..3:\n%s", len(got), failed, strings.Join(got, "\n"))
	}
	for _, l := range got {
		if !strings.Contains(l, "kernel route failed") {
			t.Errorf("unexpected line %q", l)
		}
	}
}
