package reducer

import (
	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

func (t *tx) inputProblems(a state.InputProblemsReported) {
	in := &t.s.Inputs
	if len(a.Problems) == 0 {
		in.InputProblems = in.InputProblems.Delete(a.Source)
		return
	}
	in.InputProblems = in.InputProblems.Set(a.Source, append([]state.Problem(nil), a.Problems...))
}

// setProblems replaces the problems an owner reports.
func (t *tx) setProblems(owner string, probs []state.Problem) {
	out := &t.s.Out
	old, had := out.Problems.Get(owner)
	if len(probs) == 0 {
		if had {
			out.Problems = out.Problems.Delete(owner)
		}
		return
	}
	if had && equalProblems(old, probs) {
		return
	}
	out.Problems = out.Problems.Set(owner, probs)
}

func equalProblems(a, b []state.Problem) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// dirtyUsers marks every address that depends on a secret or filter.
func (t *tx) dirtyUsers(idx *pmap.Map[*pmap.Map[struct{}]], name string) {
	users, ok := idx.Get(name)
	if !ok {
		return
	}
	users.Range(func(k string, _ struct{}) bool { t.markDirty(k); return true })
}
