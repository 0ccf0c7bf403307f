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

// Journal keeps the last N actions the loop reduced. It keeps the actions
// themselves (values no one modifies) and writes their journal form when
// read: the loop never pays for encoding, which for a best-path event
// listing 100,000 prefixes, or for its 100,000 results, is most of a step.
type Journal struct {
	mu   sync.Mutex
	buf  []kept
	next int
	full bool
	seq  uint64
}

type kept struct {
	seq uint64
	at  time.Time
	a   state.Action
}

// NewJournal keeps up to n entries.
func NewJournal(n int) *Journal {
	if n < 1 {
		n = 1
	}
	return &Journal{buf: make([]kept, n)}
}

// Add records an action.
func (j *Journal) Add(a state.Action, at time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	j.buf[j.next] = kept{seq: j.seq, at: at, a: a}
	j.next = (j.next + 1) % len(j.buf)
	if j.next == 0 {
		j.full = true
	}
}

// Entries returns the kept entries, oldest first.
func (j *Journal) Entries() []Entry {
	j.mu.Lock()
	ks := append([]kept(nil), j.buf[:j.next]...)
	if j.full {
		ks = append(append([]kept(nil), j.buf[j.next:]...), ks...)
	}
	j.mu.Unlock()
	out := make([]Entry, len(ks))
	for i, k := range ks {
		raw, err := state.EncodeAction(k.a)
		if err != nil {
			raw, _ = json.Marshal(map[string]string{"unencodable": k.a.ActionName()})
		}
		out[i] = Entry{Seq: k.seq, At: k.at, Action: raw}
	}
	return out
}
