package watch

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/peeragent/peeragent/state"
)

// dirStep changes the directory, polls, and expects what is dispatched.
type dirStep struct {
	name   string
	change func(t *testing.T, dir string) // nil: no change
	polls  int
	want   []state.Action
}

func peersSynced(peers ...state.BGPPeer) state.SourceSynced {
	return state.SourceSynced{Kind: state.KindBGPPeer, Peers: peers}
}

// initialSync is what the first poll dispatches for a directory holding
// only peers.
func initialSync(peers ...state.BGPPeer) []state.Action {
	return Objects{Peers: peers}.Actions()
}

func writeStep(files map[string]string) func(*testing.T, string) {
	return func(t *testing.T, dir string) { writeManifests(t, dir, files) }
}

func removeStep(name string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// renameStep writes name as editors do: a hidden temporary file, renamed
// over the old one.
func renameStep(name, text string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		tmp := filepath.Join(dir, "."+name+".swp")
		if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// keepMtimeStep rewrites name with text (of the same size) and puts its
// old modification time back, as `cp -p` or rsync -t can.
func keepMtimeStep(name, text string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		path := filepath.Join(dir, name)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
}

// keepingReason is the problem a file whose version in force is its last
// good one has.
const keepingReason = "keeping the objects of its last good version, which this one does not all define, until it is fixed"

func TestDirReload(t *testing.T) {
	v3, v1 := "projectcalico.org/v3", "crd.projectcalico.org/v1"
	tor := manifestPeer(v3, "tor", "65001")
	half := "apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata:\n  name: p2\nspec:\n  peerIP: [192.0"
	standing := manifestPeer(v3, "p1", "65001") + "---\n" + manifestPeer(v3, "p2", "65002") + "---\n" +
		manifestPeer(v3, "p3", "65003") + "---\n" + manifestPeer(v3, "bad", "foo")
	standingProblem := state.InputProblemsReported{Source: "file/a.yaml", Problems: []state.Problem{
		{Object: "file/a.yaml", Reason: `line 25: BGPPeer "bad" (projectcalico.org/v3): invalid AS Number format (foo)`}}}
	tests := []struct {
		name  string
		files map[string]string
		steps []dirStep
	}{
		{name: "live-edit-as-number", files: map[string]string{"a.yaml": tor}, steps: []dirStep{
			{name: "initial", polls: 1, want: initialSync(filePeer("tor", 65001))},
			{name: "edit-first-poll-waits", change: writeStep(map[string]string{"a.yaml": manifestPeer(v3, "tor", "65002")}), polls: 1},
			{name: "second-poll-applies", polls: 1, want: []state.Action{peersSynced(filePeer("tor", 65002))}},
			{name: "unchanged-polls-dispatch-nothing", polls: 3},
		}},
		{name: "file-added", files: map[string]string{"a.yaml": tor}, steps: []dirStep{
			{name: "initial", polls: 1, want: initialSync(filePeer("tor", 65001))},
			{name: "add", change: writeStep(map[string]string{"0.yaml": manifestPeer(v1, "rr", "65009")}), polls: 2,
				want: []state.Action{peersSynced(filePeer("rr", 65009), filePeer("tor", 65001))}},
		}},
		{name: "file-removed", files: map[string]string{"a.yaml": tor, "n.yaml": "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"},
			steps: []dirStep{
				{name: "initial", polls: 1, want: Objects{Peers: []state.BGPPeer{filePeer("tor", 65001)},
					Nodes: []state.Node{{Name: "n1"}}}.Actions()},
				{name: "removed-kept-under-2s", change: removeStep("n.yaml"), polls: 5},
				{name: "remove-only-nodes-resent-after-2s", polls: 1,
					want: []state.Action{state.SourceSynced{Kind: state.KindNode}}},
			}},
		{name: "half-written-file-recovers", files: map[string]string{"a.yaml": tor}, steps: []dirStep{
			{name: "initial", polls: 1, want: initialSync(filePeer("tor", 65001))},
			{name: "half-written", change: writeStep(map[string]string{"b.yaml": half}), polls: 2,
				want: []state.Action{state.InputProblemsReported{Source: "file/b.yaml", Problems: []state.Problem{
					{Object: "file/b.yaml", Reason: "line 6: invalid YAML: did not find expected ',' or ']'"}}}}},
			{name: "completed", change: writeStep(map[string]string{"b.yaml": manifestPeer(v3, "p2", "65002")}), polls: 2,
				want: []state.Action{state.InputProblemsReported{Source: "file/b.yaml"},
					peersSynced(filePeer("p2", 65002), filePeer("tor", 65001))}},
		}},
		{name: "broken-edit-keeps-the-last-good-version", files: map[string]string{"a.yaml": tor}, steps: []dirStep{
			{name: "initial", polls: 1, want: initialSync(filePeer("tor", 65001))},
			{name: "broken-objects-kept", change: writeStep(map[string]string{"a.yaml": half}), polls: 2,
				want: []state.Action{state.InputProblemsReported{Source: "file/a.yaml", Problems: []state.Problem{
					{Object: "file/a.yaml", Reason: "line 6: invalid YAML: did not find expected ',' or ']'"},
					{Object: "file/a.yaml", Reason: keepingReason}}}}},
			{name: "still-broken-dispatches-nothing", polls: 3},
			{name: "fixed", change: writeStep(map[string]string{"a.yaml": manifestPeer(v3, "tor", "65008")}), polls: 2,
				want: []state.Action{state.InputProblemsReported{Source: "file/a.yaml"}, peersSynced(filePeer("tor", 65008))}},
			{name: "removed-is-forgotten-after-2s", change: removeStep("a.yaml"), polls: 6, want: []state.Action{peersSynced()}},
		}},
		// The attack (docs/semantics-notes.md): a file with a standing problem
		// (one bad document) is written short, cut after its first peer
		// (a clean version that drops two peers), then complete again.
		// The complete file is at least as good as the short one (it
		// defines all of its objects) and is applied: its peers come back.
		// Before, the short version became the file's last good version
		// and kept the two peers deleted while the complete file was on disk.
		{name: "truncated-write-of-a-file-with-a-standing-problem", files: map[string]string{"a.yaml": standing},
			steps: []dirStep{
				{name: "initial", polls: 1, want: append([]state.Action{standingProblem},
					initialSync(filePeer("p1", 65001), filePeer("p2", 65002), filePeer("p3", 65003))...)},
				{name: "written-short-clean", change: writeStep(map[string]string{"a.yaml": manifestPeer(v3, "p1", "65001")}), polls: 2,
					want: []state.Action{state.InputProblemsReported{Source: "file/a.yaml"}}},
				{name: "short-version-drops-two-after-2s", polls: 5, want: []state.Action{peersSynced(filePeer("p1", 65001))}},
				{name: "complete-again-brings-them-back", change: writeStep(map[string]string{"a.yaml": standing}), polls: 2,
					want: []state.Action{standingProblem,
						peersSynced(filePeer("p1", 65001), filePeer("p2", 65002), filePeer("p3", 65003))}},
			}},
		// Cut in the middle of a document instead: the short version has a
		// problem and lacks two peers, so the last good version (the
		// file's first, standing problem and all) stays in force: no peer
		// goes, then or 2 s later.
		{name: "truncated-mid-document-keeps-the-standing-version", files: map[string]string{"a.yaml": standing},
			steps: []dirStep{
				{name: "initial", polls: 1, want: append([]state.Action{standingProblem},
					initialSync(filePeer("p1", 65001), filePeer("p2", 65002), filePeer("p3", 65003))...)},
				{name: "written-short-mid-document", change: writeStep(map[string]string{"a.yaml": manifestPeer(v3, "p1", "65001") + "---\n" + half}),
					polls: 2, want: []state.Action{state.InputProblemsReported{Source: "file/a.yaml", Problems: []state.Problem{
						standingProblem.Problems[0], // the version kept has it still
						{Object: "file/a.yaml", Reason: "line 14: invalid YAML: did not find expected ',' or ']'"},
						{Object: "file/a.yaml", Reason: keepingReason}}}}},
				{name: "no-peer-goes", polls: 6},
				{name: "complete-again", change: writeStep(map[string]string{"a.yaml": standing}), polls: 2,
					want: []state.Action{standingProblem}},
			}},
		{name: "editor-rename-over", files: map[string]string{"a.yaml": tor}, steps: []dirStep{
			{name: "initial", polls: 1, want: initialSync(filePeer("tor", 65001))},
			{name: "rename", change: renameStep("a.yaml", manifestPeer(v3, "tor", "65003")), polls: 2,
				want: []state.Action{peersSynced(filePeer("tor", 65003))}},
		}},
		{name: "same-size-edit-keeping-mtime", files: map[string]string{"a.yaml": tor}, steps: []dirStep{
			{name: "initial", polls: 1, want: initialSync(filePeer("tor", 65001))},
			{name: "edit", change: keepMtimeStep("a.yaml", manifestPeer(v3, "tor", "65004")), polls: 2,
				want: []state.Action{peersSynced(filePeer("tor", 65004))}},
		}},
		{name: "change-seen-once-is-not-applied", files: map[string]string{"a.yaml": tor}, steps: []dirStep{
			{name: "initial", polls: 1, want: initialSync(filePeer("tor", 65001))},
			{name: "first-write", change: writeStep(map[string]string{"a.yaml": manifestPeer(v3, "tor", "65005")}), polls: 1},
			{name: "second-write-restarts-the-wait", change: writeStep(map[string]string{"a.yaml": manifestPeer(v3, "tor", "65006")}), polls: 1},
			{name: "stable", polls: 1, want: []state.Action{peersSynced(filePeer("tor", 65006))}},
		}},
		{name: "duplicate-problem-clears-with-the-winner-gone", files: map[string]string{
			"a.yaml": manifestPeer(v1, "tor", "65001"), "b.yaml": manifestPeer(v3, "tor", "65002")}, steps: []dirStep{
			{name: "initial", polls: 1, want: append([]state.Action{state.InputProblemsReported{Source: "file/b.yaml",
				Problems: []state.Problem{{Object: "file/b.yaml", Reason: `line 1: duplicate BGPPeer "tor" (projectcalico.org/v3) ` +
					`ignored: a.yaml line 1 defines it first as BGPPeer "tor" (crd.projectcalico.org/v1)`}}}},
				initialSync(filePeer("tor", 65001))...)},
			{name: "remove-winner", change: removeStep("a.yaml"), polls: 2,
				want: []state.Action{state.InputProblemsReported{Source: "file/b.yaml"}, peersSynced(filePeer("tor", 65002))}},
		}},
		{name: "secret-rotation-resends-secrets-only", files: map[string]string{"a.yaml": tor,
			"s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {pw: one}\n"}, steps: []dirStep{
			{name: "initial", polls: 1, want: Objects{Peers: []state.BGPPeer{filePeer("tor", 65001)}, Secrets: []state.Secret{
				{Name: "s", Data: map[string]state.Password{"pw": state.NewPassword("one")}}}}.Actions()},
			{name: "rotate", change: writeStep(map[string]string{"s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {pw: two}\n"}),
				polls: 2, want: []state.Action{state.SourceSynced{Kind: state.KindSecret, Secrets: []state.Secret{
					{Name: "s", Data: map[string]state.Password{"pw": state.NewPassword("two")}}}}}},
		}},
		{name: "directory-vanishes-and-returns", files: map[string]string{"a.yaml": tor}, steps: []dirStep{
			{name: "initial", polls: 1, want: initialSync(filePeer("tor", 65001))},
			{name: "vanish-keeps-objects", change: removeStep(""), polls: 2, want: []state.Action{
				state.InputProblemsReported{Source: "file/.", Problems: []state.Problem{
					{Object: "file/.", Reason: "cannot list the directory: no such file or directory"}}}}},
			{name: "return", change: writeStep(map[string]string{"a.yaml": manifestPeer(v3, "tor", "65007")}), polls: 2,
				want: []state.Action{state.InputProblemsReported{Source: "file/."}, peersSynced(filePeer("tor", 65007))}},
		}},
		{name: "missing-at-start-syncs-once-listed", steps: []dirStep{
			{name: "missing", change: removeStep(""), polls: 2, want: []state.Action{
				state.InputProblemsReported{Source: "file/.", Problems: []state.Problem{
					{Object: "file/.", Reason: "cannot list the directory: no such file or directory"}}}}},
			{name: "created", change: writeStep(map[string]string{"a.yaml": tor}), polls: 1,
				want: append([]state.Action{state.InputProblemsReported{Source: "file/."}}, initialSync(filePeer("tor", 65001))...)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeManifests(t, dir, tt.files)
			var got []state.Action
			r := newDirReload(NewDir(dir, slog.New(slog.NewTextHandler(io.Discard, nil))),
				func(a state.Action) { got = append(got, a) })
			clock := time.Unix(1e9, 0)
			r.now = func() time.Time { return clock }
			for _, s := range tt.steps {
				if s.change != nil {
					s.change(t, dir)
				}
				for range s.polls {
					clock = clock.Add(DirPollInterval)
					r.poll()
				}
				if d := cmp.Diff(s.want, got, fileCmp); d != "" {
					t.Errorf("step %s: dispatched (-want +got):\n%s", s.name, d)
				}
				got = nil
			}
		})
	}
}

// TestDirRun runs the source as the agent does: the initial lists, a live
// edit, a broken Secret that must not reach the problems or the log, and
// the end of Run with its context.
func TestDirRun(t *testing.T) {
	dir := t.TempDir()
	writeManifests(t, dir, map[string]string{"a.yaml": manifestPeer("projectcalico.org/v3", "tor", "65001")})
	var logs bytes.Buffer
	d := NewDir(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	d.Interval = 5 * time.Millisecond
	actions := make(chan state.Action, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx, func(a state.Action) { actions <- a }) }()

	await := func(what string, ok func(state.Action) bool) {
		t.Helper()
		timeout := time.After(5 * time.Second)
		for {
			select {
			case a := <-actions:
				if ok(a) {
					return
				}
			case <-timeout:
				t.Fatalf("no %s within 5s", what)
			}
		}
	}
	peerAS := func(as int64) func(state.Action) bool {
		return func(a state.Action) bool {
			s, ok := a.(state.SourceSynced)
			return ok && s.Kind == state.KindBGPPeer && len(s.Peers) == 1 && s.Peers[0].ASNumber == as
		}
	}
	await("initial peers", peerAS(65001))
	renameStep("a.yaml", manifestPeer("projectcalico.org/v3", "tor", "65002"))(t, dir)
	await("edited peers", peerAS(65002))
	writeManifests(t, dir, map[string]string{"s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {pw: " + manifestPassword + "}\n"})
	await("the broken Secret's problem", func(a state.Action) bool {
		p, ok := a.(state.InputProblemsReported)
		return ok && p.Source == "file/s.yaml" && len(p.Problems) == 1
	})

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of its context ending")
	}
	if strings.Contains(logs.String(), manifestPassword) {
		t.Errorf("the log holds the secret:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "file/s.yaml") {
		t.Errorf("the log does not report the broken Secret:\n%s", logs.String())
	}
}

func TestDirSecretWatchesAreNoOps(t *testing.T) {
	d := NewDir(t.TempDir(), nil)
	d.Watch("s")
	d.Unwatch("s")
}
