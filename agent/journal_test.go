package agent

import (
	"testing"
	"time"

	"github.com/peeragent/peeragent/state"
)

// TestJournalKeepsTheLastInOrder: a full ring gives its last n actions,
// oldest first, each in its journal form (encoded when read).
func TestJournalKeepsTheLastInOrder(t *testing.T) {
	j := NewJournal(3)
	t0 := time.Unix(1000, 0)
	for i := range 5 {
		j.Add(state.PeerDeleted{Name: string(rune('a' + i))}, t0.Add(time.Duration(i)*time.Second))
	}
	got := j.Entries()
	if len(got) != 3 {
		t.Fatalf("%d entries, want 3", len(got))
	}
	for i, e := range got {
		want, _ := state.EncodeAction(state.PeerDeleted{Name: string(rune('c' + i))})
		if e.Seq != uint64(3+i) || !e.At.Equal(t0.Add(time.Duration(2+i)*time.Second)) || string(e.Action) != string(want) {
			t.Errorf("entry %d = %d %v %s, want %d %v %s", i, e.Seq, e.At, e.Action, 3+i, t0.Add(time.Duration(2+i)*time.Second), want)
		}
	}
	if got := NewJournal(3); len(got.Entries()) != 0 {
		t.Errorf("an empty journal has entries")
	}
}
