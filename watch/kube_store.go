package watch

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/peeragent/peeragent/state"
)

// kindCodec says how one kind of object becomes Actions.
type kindCodec[T any] struct {
	decode func(obj any) (T, error)
	upsert func(T) state.Action
	remove func(name string) state.Action
	// synced turns a complete list (sorted by name, undecodable objects
	// left out) into the actions that replace the kind's objects.
	synced func([]T) []state.Action
	// object names an object in a problem, e.g. "bgppeer/NAME".
	object func(name string) string
	// accept, when set, drops objects of other names (a per-name watch).
	accept func(name string) bool
	// listProblem, when set, is the problem object a 403 on the list or
	// watch is reported under; otherwise such errors are only logged.
	listProblem string
	// forbidden, when set, is the reason of a 403 on the list or watch
	// (by default "forbidden: " and the server's message): what grant is
	// missing, where the codec knows it.
	forbidden func(err error) string
	// keep, when set, drops objects at the edge by their content (another
	// node's BlockAffinity or Pod): such an object dispatches nothing, and
	// one that was kept and no longer is goes as a remove.
	keep func(obj any) bool
	// namespaced: objects are keyed and named "NAMESPACE/NAME".
	namespaced bool
}

// storeEntry is what the store remembers of an object: enough to drop an
// unchanged resourceVersion or an unchanged conversion, and to know
// whether the object was left out with a problem.
type storeEntry[T any] struct {
	rv      string
	val     T
	problem string // non-empty: undecodable, left out
}

// kindStore is the cache.ReflectorStore a Reflector feeds: it keeps no
// objects, only entries, and dispatches what changed. Replace (a list or
// relist) becomes the codec's synced actions, Add/Update an upsert,
// Delete a remove; Resync does nothing. Undecodable objects become
// InputProblemsReported (cleared with an empty report) and are left out.
type kindStore[T any] struct {
	codec    kindCodec[T]
	dispatch func(state.Action)
	log      *slog.Logger

	mu          sync.Mutex
	seen        map[string]storeEntry[T]
	listProblem string // reason of the reported list-level problem
	stopped     bool
}

func newKindStore[T any](c kindCodec[T], dispatch func(state.Action), log *slog.Logger) *kindStore[T] {
	return &kindStore[T]{codec: c, dispatch: dispatch, log: log, seen: map[string]storeEntry[T]{}}
}

// Add implements cache.ReflectorStore.
func (s *kindStore[T]) Add(obj any) error { s.upsert(obj); return nil }

// Update implements cache.ReflectorStore.
func (s *kindStore[T]) Update(obj any) error { s.upsert(obj); return nil }

// Resync implements cache.ReflectorStore: there is nothing to resync.
func (s *kindStore[T]) Resync() error { return nil }

// stop clears a reported list problem and makes the store drop
// everything from then on: once it returns, the store dispatches nothing.
func (s *kindStore[T]) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setListProblem("")
	s.stopped = true
}

func (s *kindStore[T]) upsert(obj any) {
	name, rv, ok := s.identity(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok || s.stopped || !s.accepts(name) {
		return
	}
	old, had := s.seen[name]
	if !s.keeps(obj) {
		if had { // kept before (its node changed): gone for us
			delete(s.seen, name)
			s.reportObject(name, old.problem, "")
			if old.problem == "" {
				s.dispatch(s.codec.remove(name))
			}
		}
		return
	}
	if had && rv != "" && rv == old.rv {
		return
	}
	next := s.entry(obj, rv)
	s.seen[name] = next
	s.reportObject(name, old.problem, next.problem)
	switch {
	case next.problem != "":
		if had && old.problem == "" {
			s.dispatch(s.codec.remove(name))
		}
	case had && old.problem == "" && reflect.DeepEqual(old.val, next.val):
		// Only fields we do not read changed (status, metadata).
	default:
		s.dispatch(s.codec.upsert(next.val))
	}
}

// Delete implements cache.ReflectorStore; tombstones are unwrapped.
func (s *kindStore[T]) Delete(obj any) error {
	name, ok := s.deletedKey(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok || s.stopped || !s.accepts(name) {
		return nil
	}
	old, had := s.seen[name]
	if !had && s.codec.keep != nil {
		return nil // never dispatched: dropped at the edge, or already removed
	}
	delete(s.seen, name)
	s.reportObject(name, old.problem, "")
	if !had || old.problem == "" {
		s.dispatch(s.codec.remove(name))
	}
	return nil
}

// Replace implements cache.ReflectorStore: a complete (re)list.
func (s *kindStore[T]) Replace(list []any, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	next := make(map[string]storeEntry[T], len(list))
	for _, obj := range list {
		if name, rv, ok := s.identity(obj); ok && s.accepts(name) && s.keeps(obj) {
			next[name] = s.entry(obj, rv)
		}
	}
	s.setListProblem("")
	for _, a := range s.codec.synced(decodedValues(next)) {
		s.dispatch(a)
	}
	for _, name := range unionNames(s.seen, next) {
		s.reportObject(name, s.seen[name].problem, next[name].problem)
	}
	s.seen = next
	return nil
}

// observe is told the outcome of every list and watch call: a failure
// (403, or the API server unreachable) becomes a problem when the codec
// names one, and a success clears it.
func (s *kindStore[T]) observe(err error) {
	if s.codec.listProblem == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	switch {
	case err == nil:
		s.setListProblem("")
	case apierrors.IsForbidden(err) && s.codec.forbidden != nil:
		s.setListProblem(s.codec.forbidden(err))
	case apierrors.IsForbidden(err):
		s.setListProblem("forbidden: " + err.Error())
	case errors.Is(err, context.Canceled):
		// shutting down
	default:
		// The API server is unreachable or failing: visible in the State
		// while it lasts (the reflector retries with backoff).
		s.setListProblem("unavailable: " + err.Error())
	}
}

func (s *kindStore[T]) keeps(obj any) bool {
	return s.codec.keep == nil || s.codec.keep(obj)
}

// identity is an object's key (its name, or NAMESPACE/NAME) and
// resourceVersion.
func (s *kindStore[T]) identity(obj any) (key, rv string, ok bool) {
	name, rv, ok := objectIdentity(obj)
	if ok && s.codec.namespaced {
		m, _ := meta.Accessor(obj)
		name = m.GetNamespace() + "/" + name
	}
	return name, rv, ok
}

// deletedKey is the key of a deleted object or of a tombstone's.
func (s *kindStore[T]) deletedKey(obj any) (string, bool) {
	if !s.codec.namespaced {
		return deletedName(obj)
	}
	tomb, isTomb := obj.(cache.DeletedFinalStateUnknown)
	if !isTomb {
		key, _, ok := s.identity(obj)
		return key, ok
	}
	if key, _, ok := s.identity(tomb.Obj); ok {
		return key, true
	}
	return tomb.Key, strings.Contains(tomb.Key, "/")
}

func (s *kindStore[T]) accepts(name string) bool {
	return s.codec.accept == nil || s.codec.accept(name)
}

func (s *kindStore[T]) entry(obj any, rv string) storeEntry[T] {
	v, err := s.codec.decode(obj)
	if err != nil {
		return storeEntry[T]{rv: rv, problem: err.Error()}
	}
	return storeEntry[T]{rv: rv, val: v}
}

// reportObject dispatches a change of an object's decode problem.
func (s *kindStore[T]) reportObject(name, was, now string) {
	if was == now {
		return
	}
	obj := s.codec.object(name)
	if now != "" {
		s.log.Warn("object left out", "object", obj, "reason", now)
	}
	s.dispatch(problemReport(obj, now))
}

func (s *kindStore[T]) setListProblem(reason string) {
	if s.codec.listProblem == "" || reason == s.listProblem {
		return
	}
	s.listProblem = reason
	s.dispatch(problemReport(s.codec.listProblem, reason))
}

// problemReport replaces the problems of source obj: one with reason, or
// none when reason is empty.
func problemReport(obj, reason string) state.InputProblemsReported {
	a := state.InputProblemsReported{Source: obj}
	if reason != "" {
		a.Problems = []state.Problem{{Object: obj, Reason: reason}}
	}
	return a
}

// decodedValues returns the values of the decodable entries, by name.
func decodedValues[T any](m map[string]storeEntry[T]) []T {
	out := make([]T, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if e := m[name]; e.problem == "" {
			out = append(out, e.val)
		}
	}
	return out
}

func unionNames[T any](a, b map[string]storeEntry[T]) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// objectIdentity is an object's name and resourceVersion.
func objectIdentity(obj any) (name, rv string, ok bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", "", false
	}
	return m.GetName(), m.GetResourceVersion(), true
}

// deletedName is the name of a deleted object or of a tombstone's.
func deletedName(obj any) (string, bool) {
	tomb, isTomb := obj.(cache.DeletedFinalStateUnknown)
	if !isTomb {
		name, _, ok := objectIdentity(obj)
		return name, ok
	}
	if name, _, ok := objectIdentity(tomb.Obj); ok {
		return name, true
	}
	_, name, err := cache.SplitMetaNamespaceKey(tomb.Key)
	return name, err == nil && name != ""
}
