package e2e

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/peeragent/peeragent/agent"
)

// tally follows a loop's journal (agent.Loop.Journal: what /actions serves)
// and counts the actions the loop has reduced, by name; a SourceSynced as
// "sourceSynced/KIND" and an InputProblemsReported as
// "inputProblemsReported/SOURCE". It reads the journal when asked, so the
// journal must keep what the loop reduces between two reads
// (agent.LoopConfig.Journal): a gap fails the test.
type tally struct {
	journal *agent.Journal
	mu      sync.Mutex
	seq     uint64 // the last entry counted
	counts  map[string]int
}

func newTally(j *agent.Journal) *tally { return &tally{journal: j, counts: map[string]int{}} }

// read counts what the loop reduced since the last read and returns the
// counts (a copy) and the number of actions reduced in all.
func (c *tally) read(t testing.TB) (map[string]int, int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.journal.Entries() {
		if e.Seq <= c.seq {
			continue
		}
		if e.Seq != c.seq+1 {
			t.Fatalf("the journal dropped actions %d to %d before they were counted: make it larger", c.seq+1, e.Seq-1)
		}
		key, err := tallyKey(e.Action)
		if err != nil {
			t.Fatalf("journal entry %d: %v", e.Seq, err)
		}
		c.counts[key]++
		c.seq = e.Seq
	}
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out, int(c.seq)
}

// tallyKey is the name an action in its journal form is counted under.
func tallyKey(raw json.RawMessage) (string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || len(m) != 1 {
		return "", fmt.Errorf("not one action: %s", raw)
	}
	for name, fields := range m {
		if name != "sourceSynced" && name != "inputProblemsReported" {
			return name, nil
		}
		var f struct {
			Kind   string `json:"kind"`
			Source string `json:"source"`
		}
		if err := json.Unmarshal(fields, &f); err != nil {
			return "", fmt.Errorf("%s: %v", name, err)
		}
		return name + "/" + f.Kind + f.Source, nil
	}
	return "", nil
}
