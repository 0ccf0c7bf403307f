package agent

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/peeragent/peeragent/state"
)

// Entry is one journaled action: its sequence number, when the loop
// reduced it, and the action in its journal form (no secret text).
type Entry struct {
	Seq    uint64          `json:"seq"`
	At     time.Time       `json:"at"`
	Action json.RawMessage `json:"action"`
}

// Journal keeps the last N actions the loop reduced.
type Journal struct {
	mu   sync.Mutex
	buf  []Entry
	next int
	full bool
	seq  uint64
}

// NewJournal keeps up to n entries.
func NewJournal(n int) *Journal {
	if n < 1 {
		n = 1
	}
	return &Journal{buf: make([]Entry, n)}
}

// Add records an action.
func (j *Journal) Add(a state.Action, at time.Time) {
	raw, err := state.EncodeAction(a)
	if err != nil {
		raw, _ = json.Marshal(map[string]string{"unencodable": a.ActionName()})
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	j.buf[j.next] = Entry{Seq: j.seq, At: at, Action: raw}
	j.next = (j.next + 1) % len(j.buf)
	if j.next == 0 {
		j.full = true
	}
}

// Entries returns the kept entries, oldest first.
func (j *Journal) Entries() []Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.full {
		return append([]Entry(nil), j.buf[:j.next]...)
	}
	return append(append([]Entry(nil), j.buf[j.next:]...), j.buf[:j.next]...)
}
