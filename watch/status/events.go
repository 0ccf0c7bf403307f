package status

import (
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/peeragent/peeragent/state"
)

// Event reasons: a problem about the object appeared, or cleared.
const (
	ReasonProblem        = "Problem"
	ReasonProblemCleared = "ProblemCleared"
)

// eventLog turns the problems of successive States into Events on the
// objects they name, remembering what it reported per object.
type eventLog struct {
	rec   Recorder
	group string // the Calico API group-version of BGPPeers and BGPFilters
	min   time.Duration
	sent  map[string][]string  // object -> problem reasons reported as present
	last  map[string]time.Time // object -> when its last Events were sent
}

func newEventLog(rec Recorder, group string, min time.Duration) *eventLog {
	return &eventLog{rec: rec, group: group, min: min, sent: map[string][]string{}, last: map[string]time.Time{}}
}

// step reports, per object whose interval allows it, the problems that
// appeared (Warning) and cleared (Normal) since its last Events; it
// returns when a held-back object is next due (zero: none is).
func (e *eventLog) step(now time.Time, problems []state.Problem) time.Time {
	current := map[string][]string{}
	for _, p := range problems { // sorted by object, then reason
		if _, ok := objectRef(p.Object, e.group); ok {
			current[p.Object] = append(current[p.Object], p.Reason)
		}
	}
	var next time.Time
	for _, obj := range unionKeys(current, e.sent) {
		appeared, cleared := minus(current[obj], e.sent[obj]), minus(e.sent[obj], current[obj])
		if len(appeared)+len(cleared) == 0 {
			continue
		}
		if due := e.last[obj].Add(e.min); now.Before(due) {
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		ref, _ := objectRef(obj, e.group)
		for _, r := range appeared {
			e.rec.Event(ref, corev1.EventTypeWarning, ReasonProblem, r)
		}
		for _, r := range cleared {
			e.rec.Event(ref, corev1.EventTypeNormal, ReasonProblemCleared, "cleared: "+r)
		}
		e.last[obj] = now
		if len(current[obj]) == 0 {
			delete(e.sent, obj)
		} else {
			e.sent[obj] = current[obj]
		}
	}
	for obj, t := range e.last { // forget objects quiet for a whole interval
		if _, ok := e.sent[obj]; !ok && !now.Before(t.Add(e.min)) {
			delete(e.last, obj)
		}
	}
	return next
}

// objectRef is the object a problem names, when it is one Events go on
// (docs/semantics.md §7 names problems kind/name in lower case): a
// BGPPeer or BGPFilter in the Calico group read, or a Secret (secret/NS/NAME).
func objectRef(obj, group string) (*corev1.ObjectReference, bool) {
	kind, name, ok := strings.Cut(obj, "/")
	if !ok || name == "" {
		return nil, false
	}
	switch kind {
	case string(state.KindBGPPeer):
		return &corev1.ObjectReference{APIVersion: group, Kind: "BGPPeer", Name: name}, true
	case string(state.KindBGPFilter):
		return &corev1.ObjectReference{APIVersion: group, Kind: "BGPFilter", Name: name}, true
	case "secret":
		ns, n, ok := strings.Cut(name, "/")
		if !ok || ns == "" || n == "" {
			return nil, false
		}
		return &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: ns, Name: n}, true
	}
	return nil, false
}

// unionKeys is the keys of a and of b, sorted, each once.
func unionKeys(a, b map[string][]string) []string {
	keys := slices.AppendSeq(slices.Collect(maps.Keys(a)), maps.Keys(b))
	slices.Sort(keys)
	return slices.Compact(keys) // a key of both is there twice
}

// minus is a without the members of b (both sorted, no duplicates).
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); !found {
			out = append(out, x)
		}
	}
	return out
}
