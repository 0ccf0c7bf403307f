package watch

// The manifest-directory source (`peeragent run --from DIR`, `peeragent
// plan --from DIR`) reads the same objects as the Kubernetes source from a
// directory of manifests:
//
//   - Files: every regular file directly in the directory (not recursive),
//     at most 16 MiB, opened without blocking and never on /proc or /sys,
//     whose name ends in .yaml, .yml or .json (any case), in name order.
//     Names starting with "." are skipped (editor swap and lock files, and
//     the ..data links of a mounted ConfigMap, whose files are symlinks and
//     are followed). A file is named in problems as "file/" + its name
//     relative to the directory, e.g. file/peers.yaml, so that output does
//     not depend on where the directory is; the directory itself is
//     "file/.".
//   - Documents: YAML with several documents per file ("---"), or JSON.
//     Read: BGPPeer, BGPConfiguration, BGPFilter, BlockAffinity and IPPool
//     in crd.projectcalico.org/v1 or projectcalico.org/v3 (one object,
//     either group, side by side; docs/routes.md §11.7), core v1 Node,
//     v1 Secret and v1 Pod (only those whose spec.nodeName is the agent's
//     node; others are skipped silently, so a dump of every Pod can be
//     used), v1 Service and discovery.k8s.io/v1 EndpointSlice (all
//     namespaces, as the cluster source watches them; taken only while a
//     service range is configured, docs/routes.md §8.4), and v1 List (as
//     `kubectl get -o yaml` writes) of those. Secrets are taken from the
//     agent's namespace, or with none (the directory is the agent's own); a
//     Secret of another namespace is a problem and is not read (docs/semantics.md
//     §1), so it can never stand in for the agent's own.
//     Ignored silently: every other kind, including Calico kinds that are
//     not read (FelixConfiguration, IPAMBlock...), so a directory can also
//     hold other manifests. A problem: a BGP-looking kind this agent does
//     not know (a typo such as BGPPeers), a BGP kind in another version of
//     the Calico groups, a document with neither apiVersion nor kind, or
//     missing one of them for a kind it reads.
//   - Decoding: each document goes through sigs.k8s.io/yaml into the
//     Calico v3 or core v1 type, then the converters of convert.go. Calico
//     objects are strict (an unknown or repeated field is a problem, as
//     with `kubectl apply`); Nodes, Secrets, Pods, Services and
//     EndpointSlices are lenient (files_decode.go). A document's YAML is
//     converted to JSON once, and its kind and its object are read from
//     that JSON. What that cannot read exactly as before is read from the
//     YAML as before: a document that does not convert strictly (a
//     repeated key, which the lenient kinds still read), a lenient object
//     that needs sigs.k8s.io/yaml's typed conversion (a number as a label
//     value), a List's items (convertManifestDoc, decodeLenient).
//   - Problems: a file that cannot be read, a document that is not valid
//     YAML or does not decode into its type, an object without a name, or a
//     duplicate, is a Problem{Object: "file/NAME", Reason: "line N: ..."}
//     (no line for the whole file), N counted from 1 in the file; the
//     object is skipped and everything else still loads. Problems never
//     quote a Secret's data (files_redact.go).
//   - Duplicates: the same kind and name defined twice (in one file or
//     two, in one API group or both) is one object: the first definition in
//     file-name and document order wins, and each later one is a problem
//     on its own file naming the winner. The result never depends on the
//     order the files were written in.

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/peeragent/peeragent/state"
)

// Objects is a complete snapshot of the inputs: a list of every kind, in
// the form of a SourceSynced (whose Kind it leaves empty). Affinities and
// Pods are this node's; Services and EndpointSlices of all namespaces.
type Objects state.SourceSynced

// Actions returns one SourceSynced per kind, all ten (secrets included),
// in state.InputKinds order: nodes, configurations, filters, secrets, then
// peers, so that peers are resolved against complete inputs, then pools,
// affinities, pods, services and endpoint slices (the reducer takes these
// two only while a service range is configured, docs/routes.md §8.4, so
// they come after the configurations).
func (o Objects) Actions() []state.Action {
	out := make([]state.Action, 0, len(state.InputKinds))
	for _, k := range state.InputKinds {
		out = append(out, k.Synced((*state.SourceSynced)(&o)))
	}
	return out
}

// add appends a converted object to its kind's list.
func (o *Objects) add(v any) {
	for _, k := range state.InputKinds {
		if k.Append((*state.SourceSynced)(o), v) {
			return
		}
	}
}

// sortByName orders every list by name (NAMESPACE/NAME for the namespaced
// kinds), whatever the file order.
func (o *Objects) sortByName() {
	for _, k := range state.InputKinds {
		k.SortByKey((*state.SourceSynced)(o))
	}
}

// LoadDir reads every manifest file of dir once: the objects, and the
// problems of every file in file order. A directory that cannot be listed
// is one problem on "file/." and no objects.
func LoadDir(dir string) (Objects, []state.Problem) {
	return LoadDirIn(dir, state.DefaultNamespace)
}

// LoadDirIn is LoadDir for an agent whose Secrets are in namespace; it
// reads no Pod (LoadDirOn does).
func LoadDirIn(dir, namespace string) (Objects, []state.Problem) {
	return LoadDirOn(dir, namespace, "")
}

// LoadDirOn is LoadDirIn for an agent on node: the Pods whose
// spec.nodeName is node are read too (none when node is empty).
func LoadDirOn(dir, namespace, node string) (Objects, []state.Problem) {
	files, err := readManifestDir(dir)
	if err != nil {
		return Objects{}, []state.Problem{dirProblem(err)}
	}
	objs, probs := loadFiles(files, namespace, node)
	var out []state.Problem
	for _, f := range files {
		out = append(out, probs[fileSource(f.name)]...)
	}
	return objs, out
}

// fileInput is one manifest file as read.
type fileInput struct {
	name string // relative to the directory
	data []byte
	err  string // why it could not be read; "" when it was
}

// fileSource is the problem source and object name of a file.
func fileSource(name string) string { return "file/" + filepath.ToSlash(name) }

// dirSource names the directory itself in problems.
const dirSource = "file/."

func dirProblem(err error) state.Problem {
	return state.Problem{Object: dirSource, Reason: "cannot list the directory: " + fileErrText(err)}
}

// loadFiles decodes files, in order, into Objects and the problems of each
// file that has any, by source. The first definition of a kind and name
// wins; later ones are problems on their own file.
func loadFiles(files []fileInput, namespace, node string) (Objects, map[string][]state.Problem) {
	return loadFilesRetaining(files, nil, func(f fileInput) ([]manifestObject, []fileProblem) {
		return decodeManifestIn(f.data, namespace, node)
	})
}

// loadFilesRetaining is loadFiles, then the retained versions (of files
// changed or removed a moment ago), which only add objects nothing else
// defines and report no problem. decode decodes one file version.
func loadFilesRetaining(files, retained []fileInput, decode func(fileInput) ([]manifestObject, []fileProblem)) (Objects, map[string][]state.Problem) {
	var o Objects
	problems := scanFiles(files, retained, decode, func(obj manifestObject) { o.add(obj.value) })
	o.sortByName()
	return o, problems
}

// scanFiles is loadFilesRetaining's walk: it calls add with each object
// that is the first definition of its kind and name, and returns the
// problems. keepLastGood, which needs only a file's problems, builds no
// Objects.
func scanFiles(files, retained []fileInput, decode func(fileInput) ([]manifestObject, []fileProblem), add func(manifestObject)) map[string][]state.Problem {
	problems := map[string][]state.Problem{}
	first := map[string]firstDefinition{}
	for i, f := range slices.Concat(files, retained) {
		var fps []fileProblem
		if f.err != "" {
			fps = []fileProblem{{reason: f.err}}
		} else {
			objs, ps := decode(f)
			fps = ps
			for _, obj := range objs {
				key := string(obj.kind) + "/" + obj.name
				if w, dup := first[key]; dup {
					fps = append(fps, duplicateManifestProblem(obj, w))
					continue
				}
				first[key] = firstDefinition{file: f.name, obj: obj}
				add(obj)
			}
		}
		if len(fps) > 0 && i < len(files) {
			problems[fileSource(f.name)] = fileProblems(f.name, fps)
		}
	}
	return problems
}

// firstDefinition is where an object was first defined.
type firstDefinition struct {
	file string
	obj  manifestObject
}

func duplicateManifestProblem(obj manifestObject, w firstDefinition) fileProblem {
	detail := fmt.Sprintf("duplicate %s ignored: %s line %d defines it first as %s",
		obj.label, filepath.ToSlash(w.file), w.obj.line, w.obj.label)
	return fileProblem{line: obj.line, reason: redactSecrets(detail, slices.Concat(obj.secrets, w.obj.secrets))}
}

// fileProblems orders a file's problems by line and names them.
func fileProblems(name string, fps []fileProblem) []state.Problem {
	slices.SortStableFunc(fps, func(a, b fileProblem) int { return cmp.Compare(a.line, b.line) })
	out := make([]state.Problem, 0, len(fps))
	for _, p := range fps {
		reason := p.reason
		if p.line > 0 {
			reason = fmt.Sprintf("line %d: %s", p.line, p.reason)
		}
		out = append(out, state.Problem{Object: fileSource(name), Reason: reason})
	}
	return out
}

// maxManifestSize bounds what is read of one file.
const maxManifestSize = 16 << 20

// readManifestDir reads the manifest files of dir, sorted by name.
func readManifestDir(dir string) ([]fileInput, error) {
	names, err := listManifestNames(dir)
	if err != nil {
		return nil, err
	}
	var files []fileInput
	for _, name := range names {
		if f, ok := readManifestFile(dir, name); ok {
			files = append(files, f)
		}
	}
	return files, nil
}

// listManifestNames lists the names in dir read as manifests, sorted.
func listManifestNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if isManifestName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// isManifestName reports whether a directory entry is read as a manifest.
func isManifestName(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return !strings.HasPrefix(name, ".")
	}
	return false
}

// readManifestFile reads one file; ok is false for a directory.
func readManifestFile(dir, name string) (fileInput, bool) {
	id, f := readManifestFileIfChanged(dir, name, fileID{}, fileInput{})
	return f, !id.dir
}

// fileID is what identifies one version of a file without reading it:
// a write changes its size, modification or change time (ctime cannot be
// set back, unlike mtime), a rename-over its inode.
type fileID struct {
	dev, ino, size uint64
	mtime, ctime   int64
	dir            bool
}

// readManifestFileIfChanged reads name unless its identity is prev's, in
// which case prevInput is returned as it is. Only regular files are opened
// (a FIFO or device would block), non-blocking, and a file on a pseudo
// filesystem (/proc, /sys: sizes that lie, reads that wait) is refused.
func readManifestFileIfChanged(dir, name string, prev fileID, prevInput fileInput) (fileID, fileInput) {
	path := filepath.Join(dir, name)
	fail := func(id fileID, why string) (fileID, fileInput) { return id, fileInput{name: name, err: why} }
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return fail(fileID{}, "cannot read the file: "+fileErrText(err))
	case st.IsDir():
		return fileID{dir: true}, fileInput{}
	case !st.Mode().IsRegular():
		return fail(fileID{}, "not a regular file")
	}
	if id := identity(st); id == prev && id != (fileID{}) {
		return id, prevInput
	}
	data, id, err := readRegular(path)
	if err != nil {
		return fail(fileID{}, "cannot read the file: "+fileErrText(err))
	}
	return id, fileInput{name: name, data: data}
}

func identity(st os.FileInfo) fileID {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{dev: uint64(sys.Dev), ino: sys.Ino, size: uint64(sys.Size),
		mtime: sys.Mtim.Nano(), ctime: sys.Ctim.Nano()}
}

// pseudoFilesystems are the filesystem magic numbers whose files are not
// data on a disk (statfs(2)).
var pseudoFilesystems = map[int64]string{
	0x9fa0: "procfs", 0x62656572: "sysfs", 0x64626720: "debugfs", 0x74726163: "tracefs",
	0x73636673: "securityfs", 0x1cd1: "devpts", 0x63677270: "cgroup2",
}

// manifestReads counts the files read (tests check unchanged ones are not).
var manifestReads atomic.Int64

// readRegular opens path without blocking, checks the opened file (not the
// name, which may have been swapped) is regular and on a real filesystem,
// and reads at most maxManifestSize bytes of it.
func readRegular(path string) ([]byte, fileID, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fileID{}, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fileID{}, err
	}
	if !st.Mode().IsRegular() {
		return nil, fileID{}, errors.New("not a regular file")
	}
	var sfs syscall.Statfs_t
	if err := syscall.Fstatfs(fd, &sfs); err == nil {
		if kind, pseudo := pseudoFilesystems[int64(sfs.Type)]; pseudo {
			return nil, fileID{}, fmt.Errorf("on %s, not a file with data (refused: reading it may block)", kind)
		}
	}
	manifestReads.Add(1)
	data, err := io.ReadAll(io.LimitReader(f, maxManifestSize+1))
	if err == nil && len(data) > maxManifestSize {
		err = fmt.Errorf("larger than %d MiB", maxManifestSize>>20)
	}
	return data, identity(st), err
}

// fileErrText is err's text without the path a *fs.PathError repeats.
func fileErrText(err error) string {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err.Error()
	}
	return err.Error()
}
