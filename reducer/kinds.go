package reducer

import (
	"maps"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// reduceInput applies an upsert, a deletion or a complete list (a) of one
// kind of input object: the reducer's one table of the kinds
// (state.InputKinds declares each: its key, its list, its actions). Each
// case names the kind's upsert and delete, which keep the indexes and mark
// the scopes the change invalidates (doc.go), and the map of state.Inputs
// that holds it. The calls are static, through the inlined apply, so that
// the step's tx stays on the stack (a table of function values would move
// it to the heap: one allocation of the State's size per step). False for
// an action that is not of kind (TestReducerTakesEveryInputKind).
func (t *tx) reduceInput(kind state.Kind, a state.Action) bool {
	in, ok := &t.s.Inputs, false
	switch kind {
	case state.KindBGPPeer:
		ok = apply(t, take(state.PeerInput, a, in.Peers), (*tx).upsertPeer, (*tx).deletePeer)
	case state.KindBGPConfiguration:
		ok = apply(t, withRejected(take(state.ConfigInput, a, in.Configs), a, in.RejectedConfigs), (*tx).upsertConfig, (*tx).deleteConfig)
	case state.KindBGPFilter:
		ok = apply(t, take(state.FilterInput, a, in.Filters), (*tx).upsertFilter, (*tx).deleteFilter)
	case state.KindNode:
		ok = apply(t, take(state.NodeInput, a, in.Nodes), (*tx).upsertNode, (*tx).deleteNode)
	case state.KindBlockAffinity:
		ok = apply(t, take(state.AffinityInput, a, in.Affinities), (*tx).upsertAffinity, (*tx).deleteAffinity)
	case state.KindIPPool:
		ok = apply(t, take(state.PoolInput, a, in.Pools), (*tx).upsertPool, (*tx).deletePool)
	case state.KindPod:
		ok = apply(t, take(state.PodInput, a, in.Pods), (*tx).upsertPod, (*tx).deletePod)
	case state.KindSecret:
		ok = apply(t, take(state.SecretInput, a, in.Secrets), (*tx).upsertSecret, (*tx).deleteSecret)
	case state.KindService:
		ok = apply(t, take(state.ServiceInput, a, in.Services), (*tx).upsertService, (*tx).deleteService)
	case state.KindEndpointSlice:
		ok = apply(t, take(state.SliceInput, a, in.EndpointSlices), (*tx).upsertSlice, (*tx).deleteSlice)
	}
	return ok
}

// change is what an action does to one kind: the objects it upserts (an
// upsert's one, or a complete list), then the keys it deletes (a
// deletion's one, or what the State held and the list does not).
type change[T any] struct {
	upserts []T
	deletes []string
	ok      bool // a is an action of the kind
}

// take is the change a, an upsert, a deletion or a complete list of the
// kind k, makes to held, the map of state.Inputs that holds the kind.
func take[T, E any, U, D state.Action](k *state.InputKind[T, U, D], a state.Action, held *pmap.Map[E]) change[T] {
	if s, ok := a.(state.SourceSynced); ok {
		return takeList(k, s, held)
	}
	o, key, ok := k.Split(a)
	if o != nil {
		return change[T]{upserts: o, ok: ok}
	}
	return change[T]{deletes: []string{key}, ok: ok}
}

// takeList is take for a complete list. An upsert changes only its own
// key, so what the list does not name is deleted from held as it was
// before the upserts.
func takeList[T, E any, U, D state.Action](k *state.InputKind[T, U, D], s state.SourceSynced, held *pmap.Map[E]) change[T] {
	if s.Kind != k.Kind() {
		return change[T]{}
	}
	c := change[T]{upserts: k.List(&s), ok: true}
	seen := make(map[string]bool, len(c.upserts))
	for i := range c.upserts {
		seen[k.Key(&c.upserts[i])] = true
	}
	held.Range(func(key string, _ E) bool {
		if !seen[key] {
			c.deletes = append(c.deletes, key)
		}
		return true
	})
	return c
}

// withRejected adds to a complete list's deletions the configurations it
// does not name that were only ever invalid: they are held in
// RejectedConfigs, not in Configs, and a list that leaves them out deletes
// them as it deletes any other object (golden
// bad-config-default-invalid-relisted-away).
func withRejected(c change[state.BGPConfiguration], a state.Action, rejected *pmap.Map[*state.BGPConfiguration]) change[state.BGPConfiguration] {
	if _, list := a.(state.SourceSynced); !list || !c.ok {
		return c
	}
	listed := make(map[string]bool, len(c.upserts)+len(c.deletes))
	for i := range c.upserts {
		listed[c.upserts[i].Name] = true
	}
	for _, name := range c.deletes {
		listed[name] = true // deleted already: deleteConfig drops its rejected version too
	}
	rejected.Range(func(name string, _ *state.BGPConfiguration) bool {
		if !listed[name] {
			c.deletes = append(c.deletes, name)
		}
		return true
	})
	return c
}

// apply makes the change c with the kind's upsert and delete, and tells
// whether c was of the kind. It is inlined into reduceInput, so the calls
// are static.
func apply[T any](t *tx, c change[T], upsert func(*tx, *T), del func(*tx, string)) bool {
	for i := range c.upserts {
		upsert(t, &c.upserts[i])
	}
	for _, key := range c.deletes {
		del(t, key)
	}
	return c.ok
}

// synced applies a complete list: everything listed is upserted (a no-op
// when unchanged, so an identical relist changes nothing) and everything
// of that kind not listed is deleted. Effects stay gated until every
// source has synced, so nothing is removed from the speaker on a partial
// view. A late list of a stopped Service or EndpointSlice watch
// (docs/routes.md §8.4) is dropped.
func (t *tx) synced(a state.SourceSynced) {
	if (a.Kind == state.KindService || a.Kind == state.KindEndpointSlice) && !t.s.Out.ServiceWatch {
		return
	}
	if !t.reduceInput(a.Kind, a) {
		return
	}
	if !t.s.Synced[a.Kind] {
		m := maps.Clone(t.s.Synced)
		m[a.Kind] = true
		t.s.Synced = m
	}
}
