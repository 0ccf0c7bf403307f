package watch

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/peeragent/peeragent/state"
)

// Bounds one poll of the manifest directory must keep, whatever the files. The time is a hang
// detector, not a speed assert (speed is for benchmarks): a 1 MiB seed takes seconds under -race
// on a loaded 2-core machine (8-10 s seen), an exponential blow-up takes forever.
const (
	fuzzPollTime  = time.Minute
	fuzzPollAlloc = 256 << 20
)

// FuzzManifestDir runs the manifest directory as a whole on random files:
// three files of random content, names and kinds (by extension), one of
// them possibly repeated up to 1 MiB, rewritten and removed between
// polls. Each poll must end within fuzzPollTime and allocate under
// fuzzPollAlloc, never panic, and dispatch only well-formed actions.
func FuzzManifestDir(f *testing.F) {
	f.Add([]byte(manifestPeer("projectcalico.org/v3", "a", "65001")), []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {k: v}\n"),
		[]byte("a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b]\n"), uint8(0), uint16(1))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Node, metadata: {name: n}}]\n"),
		[]byte("{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"BGPFilter\",\"metadata\":{\"name\":\"f\"}}"),
		[]byte("a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n"), uint8(7), uint16(4000))
	f.Fuzz(func(t *testing.T, a, b, c []byte, mode uint8, repeat uint16) {
		dir := t.TempDir()
		names := []string{"a.yaml", "b.json", "c.yml"}
		if mode&8 != 0 {
			names[1] = "b.txt" // not a manifest name
		}
		big := c
		if mode&1 != 0 && len(c) > 0 {
			big = bytes.Repeat(c, min(int(repeat), (1<<20)/len(c)))
		}
		write := func(name string, data []byte) {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write(names[0], a)
		write(names[1], b)
		write(names[2], big)
		r := newDirReload(NewDir(dir, slog.New(slog.NewTextHandler(io.Discard, nil))), checkAction(t))
		clock := time.Unix(1e9, 0)
		r.now = func() time.Time { return clock }
		for i := range 8 {
			switch {
			case i == 2 && mode&2 != 0:
				write(names[0], b)
			case i == 3 && mode&4 != 0:
				_ = os.Remove(filepath.Join(dir, names[1]))
			case i == 4:
				write(names[2], a)
			}
			clock = clock.Add(DirPollInterval * time.Duration(1+int(mode>>4)))
			boundedPoll(t, r.poll)
		}
	})
}

// boundedPoll runs one poll and fails if it takes or allocates too much.
func boundedPoll(t *testing.T, poll func()) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	poll()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if took > fuzzPollTime {
		t.Fatalf("a poll took %v, over %v", took, fuzzPollTime)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > fuzzPollAlloc {
		t.Fatalf("a poll allocated %d MiB, over %d MiB", alloc>>20, fuzzPollAlloc>>20)
	}
}

// checkAction fails on a dispatched action that is not a SourceSynced or
// InputProblemsReported with every problem naming a file.
func checkAction(t *testing.T) func(state.Action) {
	return func(a state.Action) {
		switch a := a.(type) {
		case state.SourceSynced:
		case state.InputProblemsReported:
			for _, p := range a.Problems {
				if p.Object != a.Source || p.Reason == "" {
					t.Fatalf("problem %+v of source %s", p, a.Source)
				}
			}
		default:
			t.Fatalf("unexpected action %T", a)
		}
	}
}
