package reducer

import (
	"maps"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// input is what the reducer does with one kind of input object
// (state.InputKind: its name, keys, list and actions): its upsert and
// delete, which keep the indexes and mark the scopes the change
// invalidates (doc.go), and where the State holds its objects, which a
// complete list replaces.
type input[T, E any, U, D state.Action] struct {
	*state.InputKind[T, U, D]
	held   func(*state.Inputs) *pmap.Map[E]
	upsert func(*tx, *T)
	delete func(*tx, string)
	// listed, when set, tells whether an object of a complete list counts
	// as listed; one that does not is upserted, and whatever the State
	// holds under its key is then deleted.
	listed func(*tx, *T) bool
	// onDemand: the kind is watched only while some service range is
	// configured (docs/routes.md §8.4), and a late list of a stopped watch
	// is dropped.
	onDemand bool
}

// inputOps is an input whatever its types.
type inputOps interface {
	state.AnyInputKind
	reduce(t *tx, a state.Action)
	synced(t *tx, a *state.SourceSynced) bool
}

func newInput[T, E any, U, D state.Action](k *state.InputKind[T, U, D], held func(*state.Inputs) *pmap.Map[E],
	upsert func(*tx, *T), del func(*tx, string)) *input[T, E, U, D] {
	return &input[T, E, U, D]{InputKind: k, held: held, upsert: upsert, delete: del}
}

// inputList is the reducer's side of every state.InputKind
// (TestReducerTakesEveryInputKind).
var inputList = []inputOps{
	newInput(state.PeerInput, func(in *state.Inputs) *pmap.Map[*state.PeerEntry] { return in.Peers },
		(*tx).upsertPeer, (*tx).deletePeer),
	newInput(state.ConfigInput, func(in *state.Inputs) *pmap.Map[*state.BGPConfiguration] { return in.Configs },
		(*tx).upsertConfig, (*tx).deleteConfig),
	newInput(state.FilterInput, func(in *state.Inputs) *pmap.Map[*state.FilterEntry] { return in.Filters },
		(*tx).upsertFilter, (*tx).deleteFilter),
	newInput(state.NodeInput, func(in *state.Inputs) *pmap.Map[*state.NodeEntry] { return in.Nodes },
		(*tx).upsertNode, (*tx).deleteNode),
	newInput(state.AffinityInput, func(in *state.Inputs) *pmap.Map[*state.AffinityEntry] { return in.Affinities },
		(*tx).upsertAffinity, (*tx).deleteAffinity).
		listedIf(func(t *tx, a *state.BlockAffinity) bool { return a.Node == "" || a.Node == t.s.Node }),
	newInput(state.PoolInput, func(in *state.Inputs) *pmap.Map[*state.PoolEntry] { return in.Pools },
		(*tx).upsertPool, (*tx).deletePool),
	newInput(state.PodInput, func(in *state.Inputs) *pmap.Map[*state.PodEntry] { return in.Pods },
		(*tx).upsertPod, (*tx).deletePod),
	newInput(state.SecretInput, func(in *state.Inputs) *pmap.Map[*state.Secret] { return in.Secrets },
		(*tx).upsertSecret, (*tx).deleteSecret),
	newInput(state.ServiceInput, func(in *state.Inputs) *pmap.Map[*state.ServiceEntry] { return in.Services },
		(*tx).upsertService, (*tx).deleteService).whileWatched(),
	newInput(state.SliceInput, func(in *state.Inputs) *pmap.Map[*state.EndpointSlice] { return in.EndpointSlices },
		(*tx).upsertSlice, (*tx).deleteSlice).whileWatched(),
}

// inputs and inputsByKind find an input by the name of its upsert or
// deletion, and by its kind.
var inputs, inputsByKind = func() (map[string]inputOps, map[state.Kind]inputOps) {
	byName, byKind := map[string]inputOps{}, map[state.Kind]inputOps{}
	for _, in := range inputList {
		u, d := in.ActionNames()
		byName[u], byName[d], byKind[in.Kind()] = in, in, in
	}
	return byName, byKind
}()

// listedIf sets listed.
func (k *input[T, E, U, D]) listedIf(listed func(*tx, *T) bool) *input[T, E, U, D] {
	k.listed = listed
	return k
}

// whileWatched sets onDemand.
func (k *input[T, E, U, D]) whileWatched() *input[T, E, U, D] {
	k.onDemand = true
	return k
}

// reduce applies an upsert or a deletion of the kind.
func (k *input[T, E, U, D]) reduce(t *tx, a state.Action) {
	if o, key, ok := k.Split(a); o != nil {
		k.upsert(t, o)
	} else if ok {
		k.delete(t, key)
	}
}

// synced applies a complete list of the kind (see tx.synced); false when
// it is not taken.
func (k *input[T, E, U, D]) synced(t *tx, a *state.SourceSynced) bool {
	if k.onDemand && !t.s.Out.ServiceWatch {
		return false
	}
	list := k.List(a)
	seen := make(map[string]bool, len(list))
	for i := range list {
		o := &list[i]
		seen[k.Key(o)] = k.listed == nil || k.listed(t, o)
		k.upsert(t, o)
	}
	deleteUnseen(k.held(&t.s.Inputs), seen, func(key string) { k.delete(t, key) })
	return true
}

// synced applies a complete list: everything listed is upserted (a no-op
// when unchanged, so an identical relist changes nothing) and everything
// of that kind not listed is deleted. Effects stay gated until every
// source has synced, so nothing is removed from the speaker on a partial view.
func (t *tx) synced(a state.SourceSynced) {
	k := inputsByKind[a.Kind]
	if k == nil || !k.synced(t, &a) {
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
