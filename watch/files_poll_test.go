package watch

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/peeragent/peeragent/state"
)

// pollRig drives a dirReload with a fake clock, one DirPollInterval per poll.
type pollRig struct {
	t     *testing.T
	dir   string
	r     *dirReload
	clock time.Time
	got   []state.Action
}

func newPollRig(t *testing.T, files map[string]string) *pollRig {
	p := &pollRig{t: t, dir: t.TempDir(), clock: time.Unix(1e9, 0)}
	writeManifests(t, p.dir, files)
	p.r = newDirReload(NewDir(p.dir, slog.New(slog.NewTextHandler(io.Discard, nil))),
		func(a state.Action) { p.got = append(p.got, a) })
	p.r.now = func() time.Time { return p.clock }
	return p
}

// poll polls n times and returns what was dispatched.
func (p *pollRig) poll(n int) []state.Action {
	p.got = nil
	for range n {
		p.clock = p.clock.Add(DirPollInterval)
		p.r.poll()
	}
	return p.got
}

func twoPeers(names ...string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += "---\n"
		}
		out += manifestPeer("projectcalico.org/v3", n, "65001")
	}
	return out
}

// TestDirPauseAtDocumentBoundary: a file written with a 1.2 s pause after
// its first document used to delete the second document's peer and add it
// back (two flaps); objects leaving a file now wait until it has been
// stable for 2 s, so nothing is dispatched at all.
func TestDirPauseAtDocumentBoundary(t *testing.T) {
	p := newPollRig(t, map[string]string{"a.yaml": twoPeers("a", "b")})
	p.poll(1)
	writeManifests(t, p.dir, map[string]string{"a.yaml": twoPeers("a")})
	if got := p.poll(3); len(got) != 0 { // 1.2 s: half-written
		t.Errorf("during the pause dispatched %v, want nothing", got)
	}
	writeManifests(t, p.dir, map[string]string{"a.yaml": twoPeers("a", "b")})
	if got := p.poll(10); len(got) != 0 {
		t.Errorf("after the pause dispatched %v, want nothing", got)
	}
	writeManifests(t, p.dir, map[string]string{"a.yaml": twoPeers("a")})
	if got := p.poll(5); len(got) != 0 {
		t.Errorf("removal under 2 s stable dispatched %v", got)
	}
	want := []state.Action{peersSynced(filePeer("a", 65001))}
	if d := cmp.Diff(want, p.poll(1), fileCmp); d != "" {
		t.Errorf("removal after 2 s stable (-want +got):\n%s", d)
	}
}

// TestDirStabilityPerFile: a file rewritten on every poll used to hold
// back every other change (a new filter took 10.8 s); stability is judged
// per file, so another file's change applies on its second poll.
func TestDirStabilityPerFile(t *testing.T) {
	p := newPollRig(t, map[string]string{"busy.yaml": twoPeers("busy-0")})
	p.poll(1)
	writeManifests(t, p.dir, map[string]string{"new.yaml": twoPeers("new")})
	var got []state.Action
	for i := 1; i <= 2; i++ {
		writeManifests(t, p.dir, map[string]string{"busy.yaml": twoPeers("busy-" + string(rune('0'+i)))})
		got = append(got, p.poll(1)...)
	}
	// busy-0 stays (busy.yaml never stable; its removal waits), new is added.
	want := []state.Action{peersSynced(filePeer("busy-0", 65001), filePeer("new", 65001))}
	if d := cmp.Diff(want, got, fileCmp); d != "" {
		t.Errorf("dispatched (-want +got):\n%s", d)
	}
}

// TestDirUnchangedFilesNotReread: a poll of an unchanged directory only
// stats its files (ten 15 MiB ignored ConfigMaps used to cost 39 % of a
// core while idle); a change, even one keeping size and mtime, is read.
func TestDirUnchangedFilesNotReread(t *testing.T) {
	files := map[string]string{}
	for _, n := range []string{"a", "b", "c"} {
		files[n+".yaml"] = twoPeers(n)
	}
	p := newPollRig(t, files)
	p.poll(1)
	before := manifestReads.Load()
	p.poll(5)
	if n := manifestReads.Load() - before; n != 0 {
		t.Errorf("five polls of an unchanged directory read %d files, want 0", n)
	}
	keepMtimeStep("b.yaml", twoPeers("x"))(t, p.dir)
	p.poll(1)
	if n := manifestReads.Load() - before; n != 1 {
		t.Errorf("a same-size, same-mtime rewrite read %d files, want 1", n)
	}
}

// TestDirNeverBlocks: a FIFO and a symlink to a /proc file (/proc/kmsg
// blocks a reader until the kernel logs; it used to hang plan and freeze
// reloading for good) are problems, and a poll returns at once.
func TestDirNeverBlocks(t *testing.T) {
	dir := t.TempDir()
	writeManifests(t, dir, map[string]string{"a.yaml": twoPeers("still-loaded")})
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Skip("no FIFOs:", err)
	}
	target := "/proc/kmsg"
	if _, err := os.Stat(target); err != nil {
		target = "/proc/self/status"
	}
	if err := os.Symlink(target, filepath.Join(dir, "kmsg.yaml")); err != nil {
		t.Skip("no symlinks:", err)
	}
	if err := os.Symlink("/proc/self/status", filepath.Join(dir, "status.yaml")); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var objs Objects
	var probs []state.Problem
	go func() { objs, probs = LoadDir(dir); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("LoadDir blocked on a FIFO or /proc file")
	}
	if len(objs.Peers) != 1 {
		t.Errorf("peers = %v, want still-loaded", objs.Peers)
	}
	objects := map[string]bool{}
	for _, pr := range probs {
		objects[pr.Object] = true
	}
	for _, f := range []string{"file/fifo.yaml", "file/status.yaml"} {
		if !objects[f] {
			t.Errorf("no problem on %s; problems: %v", f, probs)
		}
	}
	t.Logf("problems: %v", probs)
}

// TestDirDecodesEachVersionOnce: a file version is decoded once, however
// many polls apply it: while a replaced version's objects are retained
// (removalDelay), while a file's last good version stands in for a worse
// one, and while a removed file's objects are kept. (The cache kept one
// version per file: each of those polls decoded the old and the new
// version again, in turn.)
func TestDirDecodesEachVersionOnce(t *testing.T) {
	p := newPollRig(t, map[string]string{"a.yaml": twoPeers("a", "b"), "b.yaml": twoPeers("x")})
	step := func(what string, polls, want int) {
		t.Helper()
		before := p.r.decodes
		p.poll(polls)
		if n := p.r.decodes - before; n != want {
			t.Errorf("%s: %d decodes, want %d", what, n, want)
		}
	}
	step("first poll", 1, 2)
	step("unchanged", 5, 0)
	writeManifests(t, p.dir, map[string]string{"a.yaml": twoPeers("a", "b", "c")})
	step("a.yaml rewritten, applied, its old version retained, then let go", 1+1+6, 1)
	writeManifests(t, p.dir, map[string]string{"a.yaml": twoPeers("a") + "---\nkind: [\n"})
	step("a.yaml worse: its last good version kept", 2, 1)
	writeManifests(t, p.dir, map[string]string{"b.yaml": twoPeers("y")})
	step("b.yaml rewritten while a.yaml is worse", 2+6, 1)
	if err := os.Remove(filepath.Join(p.dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	writeManifests(t, p.dir, map[string]string{"a.yaml": twoPeers("a", "b", "c")})
	step("b.yaml removed, a.yaml back to its last good version", 2+6, 0)
	if got := p.poll(1); len(got) != 0 {
		t.Errorf("settled, dispatched %v", got)
	}
	if n := len(p.r.cache["a.yaml"]); n != 1 || len(p.r.cache) != 1 {
		t.Errorf("settled, the cache holds %d versions of a.yaml and %d files, want 1 and 1", n, len(p.r.cache))
	}
}
