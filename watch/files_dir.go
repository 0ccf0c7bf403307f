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
// Reload polls: every Interval it lists the directory and stats every
// manifest file; only a file whose identity changed (size, modification or
// change time, inode) is read again, and only a version read for the first
// time is decoded. Polling, rather than inotify, sees every way a file can
// change: editors that write a new file and rename it over the old one, the
// symlink swap of a mounted ConfigMap, network filesystems, and a copy
// that keeps the old modification time (its change time still moves).
//
// Stability is judged per file: a new version of a file is applied once two
// polls in a row read it (one Interval apart), so a file caught while being
// written is usually not loaded half-way, and a file rewritten all the time
// holds back no other. Additions and changes then apply at once; objects
// that leave a file (or whose file is removed) are removed only once that
// file has been stable (or absent) for 2 s, so a pause in the middle of a
// write never takes peers away and back.
//
// A file saved with a problem (a typo, a bad field, a write cut short)
// that no longer defines every object of its last good version keeps that
// version's objects, with its problems and one saying so, until it is
// fixed or removed: a mistake in a file never takes its BGPPeers away. A
// version is good when it loads cleanly, when it is at least as good as
// the last good one (it defines all of its objects), or when it is the
// file's first (keepLastGood). (LoadDir, used by `plan`, has no history
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
	// Namespace is the agent's: Secrets of another are not read
	// (state.DefaultNamespace when empty). Set it before Run.
	Namespace string
	// Node is the agent's: only its Pods are read (none when empty). Set
	// it before Run.
	Node string

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

// removalDelay is how long a file must stay unchanged (or absent) before
// the objects that left it are removed: a file caught mid-write, or written
// with a pause between documents, never takes peers away and back.
const removalDelay = 2 * time.Second

// dirReload is the state of one Run.
type dirReload struct {
	d        *Dir
	dispatch func(state.Action)
	now      func() time.Time

	synced   bool                       // the first complete lists were dispatched
	files    map[string]*dirFile        // by name, the files listed last
	gone     map[string]dirGone         // files no longer listed whose objects are kept a while
	lastGood map[string]fileInput       // by name: each file's last good version (keepLastGood)
	goodKeys map[string]map[string]bool // by name: the objects (kind/name) its last good version defines
	cache    map[string][]decoded       // by name: the decodes of its versions in use (pruneCache)
	decodes  int                        // file versions decoded (tests)
	objects  []state.Action
	problems map[string][]state.Problem // as last reported, by source
	dirErr   string                     // the directory's problem, as last reported
}

// dirFile is one manifest file across polls. Stability is judged per file:
// a new version is applied once two polls in a row read it, whatever the
// other files do.
type dirFile struct {
	id      fileID     // identity of the version last read
	read    fileInput  // that version
	applied *fileInput // the version in force (nil before the first)
	pending *fileInput // a new version seen once, applied if seen again
	seenAt  time.Time  // when the version last read was first read
	// olds are versions replaced in the last removalDelay: the objects
	// they define and the applied one does not are kept until oldsUntil.
	olds      []fileInput
	oldsUntil time.Time
}

// dirGone is a file no longer listed: its objects stay until until.
type dirGone struct {
	versions []fileInput
	until    time.Time
}

// decoded caches the decode of one file version.
type decoded struct {
	data []byte
	objs []manifestObject
	fps  []fileProblem
}

func newDirReload(d *Dir, dispatch func(state.Action)) *dirReload {
	return &dirReload{d: d, dispatch: dispatch, now: time.Now, problems: map[string][]state.Problem{},
		files: map[string]*dirFile{}, gone: map[string]dirGone{}, lastGood: map[string]fileInput{},
		goodKeys: map[string]map[string]bool{}, cache: map[string][]decoded{}}
}

// poll looks at the directory, re-reads only the files whose identity
// (size, times, inode) changed, and applies what is due: versions stable
// for two polls, and removals stable for removalDelay.
func (r *dirReload) poll() {
	names, err := listManifestNames(r.d.dir)
	r.reportDir(err)
	if err != nil {
		return
	}
	now := r.now()
	changed := !r.synced
	listed := map[string]bool{}
	for _, name := range names {
		listed[name] = true
		changed = r.pollFile(name, now) || changed
	}
	for name, f := range r.files {
		if !listed[name] {
			if f.applied != nil {
				r.gone[name] = dirGone{versions: append(f.olds, *f.applied), until: now.Add(removalDelay)}
				changed = true // its problems go, and another file's duplicates may win now
			}
			delete(r.files, name)
		}
	}
	for name, g := range r.gone {
		if listed[name] || !now.Before(g.until) {
			delete(r.gone, name)
			changed = true
		}
	}
	if changed {
		r.apply(names)
	}
}

// pollFile reads one file if it changed and reports whether what is in
// force changed: a version promoted, or retained objects let go.
func (r *dirReload) pollFile(name string, now time.Time) bool {
	f := r.files[name]
	if f == nil {
		f = &dirFile{}
		r.files[name] = f
	}
	id, in := readManifestFileIfChanged(r.d.dir, name, f.id, f.read)
	if !sameInput(in, f.read) || f.seenAt.IsZero() {
		f.seenAt = now
	}
	f.id, f.read = id, in
	changed := false
	switch {
	case f.applied != nil && sameInput(in, *f.applied):
		f.pending = nil
	case !r.synced || (f.pending != nil && sameInput(in, *f.pending)):
		if f.applied != nil {
			f.olds = append(f.olds, *f.applied)
		}
		f.applied, f.pending, changed = &in, nil, true
	default:
		f.pending = &in
	}
	if len(f.olds) > 0 {
		f.oldsUntil = f.seenAt.Add(removalDelay) // stable since seenAt
	}
	if len(f.olds) > 0 && !now.Before(f.oldsUntil) {
		f.olds, changed = nil, true
	}
	return changed
}

func appendNewestFirst(out, versions []fileInput) []fileInput {
	for i := len(versions) - 1; i >= 0; i-- {
		out = append(out, versions[i])
	}
	return out
}

func sameInput(a, b fileInput) bool {
	return a.name == b.name && a.err == b.err && bytes.Equal(a.data, b.data)
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

// apply loads the versions in force and dispatches what changed since the
// last load. Retained versions (replaced or removed in the last
// removalDelay) come last and only add the objects nothing else defines;
// their problems are not reported again.
func (r *dirReload) apply(names []string) {
	var files, retained []fileInput
	for _, name := range names {
		if f := r.files[name]; f.applied != nil {
			files = append(files, *f.applied)
			retained = appendNewestFirst(retained, f.olds)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.gone)) {
		retained = appendNewestFirst(retained, r.gone[name].versions)
	}
	use, extra := r.keepLastGood(files)
	objs, probs := loadFilesRetaining(use, retained, r.decode)
	for src, p := range extra {
		probs[src] = append(probs[src], p...)
	}
	r.pruneCache()
	changed := r.reportProblems(probs)
	kinds := r.syncObjects(objs.Actions())
	r.synced = true
	r.d.log.Info("manifests loaded", "dir", r.d.dir, "files", len(files),
		"changedKinds", kinds, "changedProblemFiles", changed)
}

// decode decodes a file version, from the cache when it was decoded before.
func (r *dirReload) decode(f fileInput) ([]manifestObject, []fileProblem) {
	for _, c := range r.cache[f.name] {
		if bytes.Equal(c.data, f.data) {
			return c.objs, c.fps
		}
	}
	ns := r.d.Namespace
	if ns == "" {
		ns = state.DefaultNamespace
	}
	objs, fps := decodeManifestIn(f.data, ns, r.d.Node)
	r.decodes++
	r.cache[f.name] = append(r.cache[f.name], decoded{data: f.data, objs: objs, fps: fps})
	return objs, fps
}

// pruneCache keeps the decodes of the versions a later apply loads
// again: each file's version in force, those it replaced in the last
// removalDelay, its last good version, and the versions of files removed
// in the last removalDelay. Keeping one per file had each apply in those
// windows decode the old and the new version again, in turn.
func (r *dirReload) pruneCache() {
	for name, cs := range r.cache {
		var keep []fileInput
		if f := r.files[name]; f != nil && f.applied != nil {
			keep = append(append(keep, *f.applied), f.olds...)
		}
		if g, ok := r.lastGood[name]; ok {
			keep = append(keep, g)
		}
		keep = append(keep, r.gone[name].versions...)
		cs = slices.DeleteFunc(cs, func(c decoded) bool {
			return !slices.ContainsFunc(keep, func(k fileInput) bool { return k.err == "" && bytes.Equal(k.data, c.data) })
		})
		if len(cs) == 0 {
			delete(r.cache, name)
		} else {
			r.cache[name] = cs
		}
	}
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
// of them the first time) and returns their kinds. A change of the
// configurations sends the Services and EndpointSlices again too: the
// reducer takes them only while a service range is configured and forgets
// them when none is (docs/routes.md §8.4), so a range added later needs
// them anew, as a cluster's watch starting would list them.
func (r *dirReload) syncObjects(actions []state.Action) []state.Kind {
	var kinds []state.Kind
	configs := false
	for i, a := range actions {
		k := a.(state.SourceSynced).Kind
		again := configs && (k == state.KindService || k == state.KindEndpointSlice)
		if r.synced && !again && reflect.DeepEqual(a, r.objects[i]) {
			continue
		}
		configs = configs || k == state.KindBGPConfiguration
		kinds = append(kinds, a.(state.SourceSynced).Kind)
		r.dispatch(a)
	}
	r.objects = actions
	return kinds
}

// keepLastGood puts back the last good version of every file whose new
// version is worse: it fails to read, or has a problem and no longer
// defines every object the last good one did (a typo that makes a
// document unreadable, a write cut short): that must not take its objects
// away and reset their sessions. The worse version's problems are still
// reported, with one more saying what is kept. A version is good when it
// loads without a problem, or is at least as good as the last good one
// (it defines each of its objects; its problems are then reported and its
// objects applied), or is the file's first: so a file with a standing
// problem keeps it as its last good version, and a clean version written
// short (which may drop objects: a deliberate removal looks the same) does
// not turn the complete file, standing problem and all, into a worse one
// when it is written back. A removed file is forgotten (removing is
// deliberate).
func (r *dirReload) keepLastGood(files []fileInput) ([]fileInput, map[string][]state.Problem) {
	out := make([]fileInput, 0, len(files))
	extra := map[string][]state.Problem{}
	present := map[string]bool{}
	for _, f := range files {
		present[f.name] = true
		probs := scanFiles([]fileInput{f}, nil, r.decode, func(manifestObject) {})
		good, had := r.lastGood[f.name]
		switch {
		case len(probs) == 0 || !had || (f.err == "" && r.definesAll(f)):
			r.lastGood[f.name], r.goodKeys[f.name] = f, r.objectKeys(f)
			out = append(out, f)
		default:
			src := fileSource(f.name)
			extra[src] = append(probs[src], state.Problem{Object: src,
				Reason: "keeping the objects of its last good version, which this one does not all define, until it is fixed"})
			out = append(out, good)
		}
	}
	for name := range r.lastGood {
		if !present[name] {
			delete(r.lastGood, name)
			delete(r.goodKeys, name)
		}
	}
	return out, extra
}

// definesAll reports whether version f defines every object that its
// file's last good version defines (from goodKeys: the last good version
// is not decoded again, which for a large file would double a poll).
func (r *dirReload) definesAll(f fileInput) bool {
	have := r.objectKeys(f)
	for k := range r.goodKeys[f.name] {
		if !have[k] {
			return false
		}
	}
	return true
}

// objectKeys are the kind/name of every object version f defines (its
// decode is cached: keepLastGood has just loaded it).
func (r *dirReload) objectKeys(f fileInput) map[string]bool {
	if f.err != "" {
		return nil
	}
	objs, _ := r.decode(f)
	keys := make(map[string]bool, len(objs))
	for _, o := range objs {
		keys[string(o.kind)+"/"+o.name] = true
	}
	return keys
}
