package agent

import (
	"sync"
	"time"

	"github.com/peeragent/peeragent/state"
)

// mailbox is the loop's unbounded inbox. Dispatch never blocks, so an
// executor reporting results can never deadlock against a loop handing it
// effects; the loop takes everything queued at once and reduces it as one
// batch (one Diff for a 10,000-object initial list).
type mailbox struct {
	mu     sync.Mutex
	queue  []state.Action
	since  time.Time // when the oldest queued action arrived (zero: none)
	signal chan struct{}
}

func newMailbox() *mailbox { return &mailbox{signal: make(chan struct{}, 1)} }

// Dispatch queues an action for the loop.
func (m *mailbox) Dispatch(a state.Action) {
	m.mu.Lock()
	if len(m.queue) == 0 {
		m.since = time.Now()
	}
	m.queue = append(m.queue, a)
	m.mu.Unlock()
	select {
	case m.signal <- struct{}{}:
	default:
	}
}

// take returns everything queued, oldest first.
func (m *mailbox) take() []state.Action {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue
	m.queue, m.since = nil, time.Time{}
	return q
}

// oldest is when the oldest action still queued arrived (zero: none).
func (m *mailbox) oldest() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.since
}
