package watch

import (
	"bytes"
	"context"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/peeragent/peeragent/state"
)

// DirPollInterval is how often a Dir looks at its directory by default.
const DirPollInterval = 400 * time.Millisecond

// Dir is the manifest-directory source: LoadDir, then live reload.
//
// Reload polls: every Interval it lists the directory and reads every
// manifest file (a manifest directory is small; reading it is cheap, and
// parsing happens only on change), and compares the contents byte for
// byte. Polling, rather than inotify, sees every way a file can change:
// editors that write a new file and rename it over the old one, the
// symlink swap of a mounted ConfigMap, network filesystems, and a copy
// that keeps the old modification time.
//
// A change is applied once the directory reads the same twice in a row
// (one Interval apart), so a file caught while being written is usually
// not loaded half-way; one that stays half-written longer becomes a
// problem, which clears when the file is complete.
//
// A file that loaded cleanly once and is then saved with a problem (a typo,
// a bad field) keeps its last good version's objects, with its problems
// and one saying so, until it is fixed or removed: a mistake in a file
// never takes its BGPPeers away. (LoadDir, used by `plan`, has no history
// and skips what it cannot read.)
//
// On a change, Dir dispatches a SourceSynced for each kind whose objects
// changed, and an InputProblemsReported for each file whose problems
// changed (an empty one when a file is fixed or removed). If the directory
// cannot be listed, that is a problem on "file/." and the last objects
// stay; before the first successful listing nothing is dispatched, so the
// agent does not report itself synced on nothing.
type Dir struct {
	// Interval is the poll period (DirPollInterval when zero). Set it
	// before Run.
	Interval time.Duration

	dir string
	log *slog.Logger
}

// NewDir returns the source for the manifests of dir; log nil means
// slog.Default().
func NewDir(dir string, log *slog.Logger) *Dir {
	if log == nil {
		log = slog.Default()
	}
	return &Dir{dir: dir, log: log}
}

// Watch is a no-op: every Secret of the directory is always loaded.
func (d *Dir) Watch(name string) {}

// Unwatch is a no-op.
func (d *Dir) Unwatch(name string) {}

// Run loads the directory, dispatches its complete lists and problems,
// then reloads on every change until ctx ends; it returns nil then.
func (d *Dir) Run(ctx context.Context, dispatch func(state.Action)) error {
	interval := d.Interval
	if interval <= 0 {
		interval = DirPollInterval
	}
	r := newDirReload(d, dispatch)
	r.poll()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			r.poll()
		}
	}
}

// dirReload is the state of one Run.
type dirReload struct {
	d        *Dir
	dispatch func(state.Action)

	synced   bool                 // the first complete lists were dispatched
	lastGood map[string]fileInput // by name: each file's last version that loaded without a problem
	loaded   []fileInput          // what the current objects were loaded from
	pending  []fileInput          // a change seen once, applied if seen again
	waiting  bool                 // pending is set
	objects  []state.Action
	problems map[string][]state.Problem // as last reported, by source
	dirErr   string                     // the directory's problem, as last reported
}

func newDirReload(d *Dir, dispatch func(state.Action)) *dirReload {
	return &dirReload{d: d, dispatch: dispatch, problems: map[string][]state.Problem{},
		lastGood: map[string]fileInput{}}
}

// poll reads the directory and applies a change that is stable.
func (r *dirReload) poll() {
	files, err := readManifestDir(r.d.dir)
	r.reportDir(err)
	if err != nil {
		return
	}
	switch {
	case !r.synced:
		r.apply(files)
	case sameManifestFiles(files, r.loaded):
		r.pending, r.waiting = nil, false
	case r.waiting && sameManifestFiles(files, r.pending):
		r.apply(files)
	default:
		r.pending, r.waiting = files, true
	}
}

// reportDir reports the directory's own problem when it appears or goes.
func (r *dirReload) reportDir(err error) {
	var probs []state.Problem
	reason := ""
	if err != nil {
		p := dirProblem(err)
		probs, reason = []state.Problem{p}, p.Reason
	}
	if reason == r.dirErr {
		return
	}
	r.dirErr = reason
	if err != nil {
		r.d.log.Warn("manifest directory unreadable; keeping the last objects", "dir", r.d.dir, "reason", reason)
	}
	r.dispatch(state.InputProblemsReported{Source: dirSource, Problems: probs})
}

// apply loads files and dispatches what changed since the last load.
func (r *dirReload) apply(files []fileInput) {
	use, extra := r.keepLastGood(files)
	objs, probs := loadFiles(use)
	for src, p := range extra {
		probs[src] = append(probs[src], p...)
	}
	changed := r.reportProblems(probs)
	kinds := r.syncObjects(objs.Actions())
	r.loaded, r.pending, r.waiting, r.synced = files, nil, false, true
	r.d.log.Info("manifests loaded", "dir", r.d.dir, "files", len(files),
		"changedKinds", kinds, "changedProblemFiles", changed)
}

// reportProblems dispatches the problems of every file whose problems
// changed (an empty list for a file that has none any more), in source
// order, and returns how many files that was.
func (r *dirReload) reportProblems(probs map[string][]state.Problem) int {
	all := maps.Clone(probs)
	for src := range r.problems {
		if _, ok := all[src]; !ok {
			all[src] = nil
		}
	}
	n := 0
	for _, src := range slices.Sorted(maps.Keys(all)) {
		if slices.Equal(r.problems[src], probs[src]) {
			continue
		}
		n++
		for _, p := range probs[src] {
			r.d.log.Warn("manifest problem", "object", p.Object, "reason", p.Reason)
		}
		r.dispatch(state.InputProblemsReported{Source: src, Problems: probs[src]})
	}
	r.problems = probs
	return n
}

// syncObjects dispatches the SourceSynced of every kind that changed (all
// of them the first time) and returns their kinds.
func (r *dirReload) syncObjects(actions []state.Action) []state.Kind {
	var kinds []state.Kind
	for i, a := range actions {
		if r.synced && reflect.DeepEqual(a, r.objects[i]) {
			continue
		}
		kinds = append(kinds, a.(state.SourceSynced).Kind)
		r.dispatch(a)
	}
	r.objects = actions
	return kinds
}

// sameManifestFiles reports whether two reads of the directory are identical.
func sameManifestFiles(a, b []fileInput) bool {
	return slices.EqualFunc(a, b, func(x, y fileInput) bool {
		return x.name == y.name && x.err == y.err && bytes.Equal(x.data, y.data)
	})
}

// keepLastGood puts back the last good version of every file that now
// fails to read or decode (and had one): a typo saved into a file must not
// take its objects away and reset their sessions. The broken version's
// problems are still reported, with one more saying what is kept. A
// removed file is forgotten (removing is deliberate). Files that load
// cleanly become the new last good versions.
func (r *dirReload) keepLastGood(files []fileInput) ([]fileInput, map[string][]state.Problem) {
	out := make([]fileInput, 0, len(files))
	extra := map[string][]state.Problem{}
	present := map[string]bool{}
	for _, f := range files {
		present[f.name] = true
		_, probs := loadFiles([]fileInput{f})
		good, had := r.lastGood[f.name]
		switch {
		case len(probs) == 0:
			r.lastGood[f.name] = f
			out = append(out, f)
		case had:
			src := fileSource(f.name)
			extra[src] = append(probs[src], state.Problem{Object: src,
				Reason: "keeping the objects of its last version that loaded without a problem, until it is fixed"})
			out = append(out, good)
		default:
			out = append(out, f)
		}
	}
	for name := range r.lastGood {
		if !present[name] {
			delete(r.lastGood, name)
		}
	}
	return out, extra
}
