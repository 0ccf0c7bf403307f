package reducer

import (
	"maps"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// synced applies a complete list: everything listed is upserted (a no-op
// when unchanged, so an identical relist changes nothing) and everything
// of that kind not listed is deleted. Effects stay gated until every
// source has synced, so nothing is removed from the speaker on a partial view.
func (t *tx) synced(a state.SourceSynced) {
	seen := map[string]bool{}
	switch a.Kind {
	case state.KindBGPPeer:
		for i := range a.Peers {
			seen[a.Peers[i].Name] = true
			t.upsertPeer(&a.Peers[i])
		}
		deleteUnseen(t.s.Inputs.Peers, seen, t.deletePeer)
	case state.KindBGPConfiguration:
		for i := range a.Configs {
			seen[a.Configs[i].Name] = true
			t.upsertConfig(&a.Configs[i])
		}
		deleteUnseen(t.s.Inputs.Configs, seen, t.deleteConfig)
	case state.KindBGPFilter:
		for i := range a.Filters {
			seen[a.Filters[i].Name] = true
			t.upsertFilter(&a.Filters[i])
		}
		deleteUnseen(t.s.Inputs.Filters, seen, t.deleteFilter)
	case state.KindNode:
		for i := range a.Nodes {
			seen[a.Nodes[i].Name] = true
			t.upsertNode(&a.Nodes[i])
		}
		deleteUnseen(t.s.Inputs.Nodes, seen, t.deleteNode)
	case state.KindBlockAffinity:
		for i := range a.Affinities {
			seen[a.Affinities[i].Name] = a.Affinities[i].Node == "" || a.Affinities[i].Node == t.s.Node
			t.upsertAffinity(&a.Affinities[i])
		}
		deleteUnseen(t.s.Inputs.Affinities, seen, t.deleteAffinity)
	case state.KindIPPool:
		for i := range a.Pools {
			seen[a.Pools[i].Name] = true
			t.upsertPool(&a.Pools[i])
		}
		deleteUnseen(t.s.Inputs.Pools, seen, t.deletePool)
	case state.KindPod:
		for i := range a.Pods {
			seen[a.Pods[i].Key()] = true
			t.upsertPod(&a.Pods[i])
		}
		deleteUnseen(t.s.Inputs.Pods, seen, t.deletePod)
	case state.KindService:
		if !t.s.Out.ServiceWatch {
			return // a late list of a stopped watch
		}
		for i := range a.Services {
			seen[a.Services[i].Key()] = true
			t.upsertService(&a.Services[i])
		}
		deleteUnseen(t.s.Inputs.Services, seen, t.deleteService)
	case state.KindEndpointSlice:
		if !t.s.Out.ServiceWatch {
			return
		}
		for i := range a.EndpointSlices {
			seen[a.EndpointSlices[i].Key()] = true
			t.upsertSlice(&a.EndpointSlices[i])
		}
		deleteUnseen(t.s.Inputs.EndpointSlices, seen, t.deleteSlice)
	case state.KindSecret:
		for i := range a.Secrets {
			seen[a.Secrets[i].Name] = true
			t.upsertSecret(&a.Secrets[i])
		}
		deleteUnseen(t.s.Inputs.Secrets, seen, t.deleteSecret)
	default:
		return
	}
	if !t.s.Synced[a.Kind] {
		m := maps.Clone(t.s.Synced)
		m[a.Kind] = true
		t.s.Synced = m
	}
}

func deleteUnseen[V any](m *pmap.Map[V], seen map[string]bool, del func(string)) {
	var gone []string
	m.Range(func(k string, _ V) bool {
		if !seen[k] {
			gone = append(gone, k)
		}
		return true
	})
	for _, k := range gone {
		del(k)
	}
}

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
