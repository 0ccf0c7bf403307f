package state

import (
	"cmp"
	"reflect"
	"slices"
)

// InputKind declares one kind of input object once (docs/design.md
// "Adding an input kind"): its Kind, the key of an object of it (its name,
// or NAMESPACE/NAME for a namespaced kind), its list in a SourceSynced, and
// its two actions, the upsert U that carries an object and the deletion D
// that names one. Code that treats every kind alike reads it from here
// (InputKinds, InputOf): the reducer's Reduce and synced, the goldens'
// step headers, the dump's list of synced kinds, the manifest directory's
// lists.
type InputKind[T any, U, D Action] struct {
	kind    Kind
	key     func(*T) string
	list    func(*SourceSynced) *[]T
	object  func(U) T
	deleted func(D) string
}

// The input kinds, one declaration each.
var (
	PeerInput = &InputKind[BGPPeer, PeerUpserted, PeerDeleted]{KindBGPPeer,
		func(o *BGPPeer) string { return o.Name }, func(s *SourceSynced) *[]BGPPeer { return &s.Peers },
		func(a PeerUpserted) BGPPeer { return a.Peer }, func(a PeerDeleted) string { return a.Name }}
	ConfigInput = &InputKind[BGPConfiguration, ConfigUpserted, ConfigDeleted]{KindBGPConfiguration,
		func(o *BGPConfiguration) string { return o.Name }, func(s *SourceSynced) *[]BGPConfiguration { return &s.Configs },
		func(a ConfigUpserted) BGPConfiguration { return a.Config }, func(a ConfigDeleted) string { return a.Name }}
	FilterInput = &InputKind[BGPFilter, FilterUpserted, FilterDeleted]{KindBGPFilter,
		func(o *BGPFilter) string { return o.Name }, func(s *SourceSynced) *[]BGPFilter { return &s.Filters },
		func(a FilterUpserted) BGPFilter { return a.Filter }, func(a FilterDeleted) string { return a.Name }}
	NodeInput = &InputKind[Node, NodeUpserted, NodeDeleted]{KindNode,
		func(o *Node) string { return o.Name }, func(s *SourceSynced) *[]Node { return &s.Nodes },
		func(a NodeUpserted) Node { return a.Node }, func(a NodeDeleted) string { return a.Name }}
	AffinityInput = &InputKind[BlockAffinity, BlockAffinityUpserted, BlockAffinityDeleted]{KindBlockAffinity,
		func(o *BlockAffinity) string { return o.Name }, func(s *SourceSynced) *[]BlockAffinity { return &s.Affinities },
		func(a BlockAffinityUpserted) BlockAffinity { return a.Affinity }, func(a BlockAffinityDeleted) string { return a.Name }}
	PoolInput = &InputKind[IPPool, IPPoolUpserted, IPPoolDeleted]{KindIPPool,
		func(o *IPPool) string { return o.Name }, func(s *SourceSynced) *[]IPPool { return &s.Pools },
		func(a IPPoolUpserted) IPPool { return a.Pool }, func(a IPPoolDeleted) string { return a.Name }}
	PodInput = &InputKind[Pod, PodUpserted, PodDeleted]{KindPod,
		(*Pod).Key, func(s *SourceSynced) *[]Pod { return &s.Pods },
		func(a PodUpserted) Pod { return a.Pod }, func(a PodDeleted) string { return a.Namespace + "/" + a.Name }}
	SecretInput = &InputKind[Secret, SecretUpserted, SecretDeleted]{KindSecret,
		func(o *Secret) string { return o.Name }, func(s *SourceSynced) *[]Secret { return &s.Secrets },
		func(a SecretUpserted) Secret { return a.Secret }, func(a SecretDeleted) string { return a.Name }}
	ServiceInput = &InputKind[Service, ServiceUpserted, ServiceDeleted]{KindService,
		(*Service).Key, func(s *SourceSynced) *[]Service { return &s.Services },
		func(a ServiceUpserted) Service { return a.Service }, func(a ServiceDeleted) string { return a.Namespace + "/" + a.Name }}
	SliceInput = &InputKind[EndpointSlice, EndpointSliceUpserted, EndpointSliceDeleted]{KindEndpointSlice,
		(*EndpointSlice).Key, func(s *SourceSynced) *[]EndpointSlice { return &s.EndpointSlices },
		func(a EndpointSliceUpserted) EndpointSlice { return a.Slice },
		func(a EndpointSliceDeleted) string { return a.Namespace + "/" + a.Name }}
)

// InputKinds are every input kind, in the order a complete listing of
// every kind is reduced (the manifest directory's first listing;
// reducer.FromScratch lists in the same order): nodes, configurations,
// filters and secrets, then peers, so that peers are resolved against
// complete inputs; then pools, affinities and pods; services and endpoint
// slices last, as the reducer takes them only while the configurations
// ask for them (docs/routes.md §8.4). A test (TestInputKindsCoverKinds)
// holds it to SyncedKinds and to the actions.
var InputKinds = []AnyInputKind{NodeInput, ConfigInput, FilterInput, SecretInput, PeerInput, PoolInput, AffinityInput,
	PodInput, ServiceInput, SliceInput}

// AnyInputKind is an InputKind whatever its object type.
type AnyInputKind interface {
	Kind() Kind
	// ActionNames are the names of its upsert and deletion.
	ActionNames() (upsert, del string)
	// ActionKey is the key of the object an upsert or a deletion of this
	// kind carries or names; false for any other action.
	ActionKey(a Action) (key string, ok bool)
	// Objects are the objects an upsert of this kind carries, or a
	// SourceSynced of this kind lists; none for any other action.
	Objects(a Action) []any
	// Holds tells whether v is an object of this kind.
	Holds(v any) bool
	// Append appends v to the kind's list in s when v is an object of the
	// kind, and tells whether it was.
	Append(s *SourceSynced, v any) bool
	// SortByKey orders the kind's list in s by key (stable).
	SortByKey(s *SourceSynced)
	// Synced is the SourceSynced of this kind with the kind's list in all.
	Synced(all *SourceSynced) SourceSynced
	actionTypes() (upsert, del reflect.Type)
	newActions() (upsert, del func() Action)
}

// Kind is the kind's name.
func (k *InputKind[T, U, D]) Kind() Kind { return k.kind }

// Key is an object's key in State.
func (k *InputKind[T, U, D]) Key(o *T) string { return k.key(o) }

// List is the kind's list in a SourceSynced (whatever its Kind).
func (k *InputKind[T, U, D]) List(s *SourceSynced) []T { return *k.list(s) }

// Split tells the kind's actions apart: an upsert gives the object it
// carries (a list of one), a deletion the key it names, and ok is false
// for any other action.
func (k *InputKind[T, U, D]) Split(a Action) (upserted []T, deleted string, ok bool) {
	switch a := a.(type) {
	case U:
		return []T{k.object(a)}, "", true
	case D:
		return nil, k.deleted(a), true
	}
	return nil, "", false
}

// ActionNames are the names of its upsert and deletion.
func (k *InputKind[T, U, D]) ActionNames() (upsert, del string) {
	var u U
	var d D
	return u.ActionName(), d.ActionName()
}

// ActionKey is the key of the object an upsert or deletion of this kind
// carries or names.
func (k *InputKind[T, U, D]) ActionKey(a Action) (string, bool) {
	o, key, ok := k.Split(a)
	if len(o) == 1 {
		key = k.key(&o[0])
	}
	return key, ok
}

// Objects are the objects an upsert of this kind carries or a SourceSynced
// of this kind lists.
func (k *InputKind[T, U, D]) Objects(a Action) []any {
	var out []any
	if s, ok := a.(SourceSynced); ok && s.Kind == k.kind {
		for _, o := range *k.list(&s) {
			out = append(out, o)
		}
	} else if o, _, _ := k.Split(a); len(o) == 1 {
		out = append(out, o[0])
	}
	return out
}

// Holds tells whether v is an object of this kind.
func (k *InputKind[T, U, D]) Holds(v any) bool {
	_, ok := v.(T)
	return ok
}

// Append appends v to the kind's list in s when v is an object of it.
func (k *InputKind[T, U, D]) Append(s *SourceSynced, v any) bool {
	o, ok := v.(T)
	if ok {
		l := k.list(s)
		*l = append(*l, o)
	}
	return ok
}

// SortByKey orders the kind's list in s by key, keeping the order of
// objects of the same key.
func (k *InputKind[T, U, D]) SortByKey(s *SourceSynced) {
	slices.SortStableFunc(*k.list(s), func(a, b T) int { return cmp.Compare(k.key(&a), k.key(&b)) })
}

// Synced is the SourceSynced of this kind with the kind's list in all.
func (k *InputKind[T, U, D]) Synced(all *SourceSynced) SourceSynced {
	s := SourceSynced{Kind: k.kind}
	*k.list(&s) = *k.list(all)
	return s
}

// inputByType finds the kind of an upsert or a deletion by its type:
// reflect.TypeOf reads only the type, so the reducer's actions stay where
// they are (an interface method call would move each to the heap).
var inputByType = func() map[reflect.Type]AnyInputKind {
	m := map[reflect.Type]AnyInputKind{}
	for _, k := range InputKinds {
		u, d := k.actionTypes()
		m[u], m[d] = k, k
	}
	return m
}()

// actionTypes are the types of its upsert and deletion.
func (k *InputKind[T, U, D]) actionTypes() (upsert, del reflect.Type) {
	return reflect.TypeFor[U](), reflect.TypeFor[D]()
}

// newActions make an empty upsert and deletion, for DecodeAction.
func (k *InputKind[T, U, D]) newActions() (upsert, del func() Action) {
	return func() Action { return any(new(U)).(Action) }, func() Action { return any(new(D)).(Action) }
}

// withInputActions adds the upsert and deletion of every input kind to m,
// by name.
func withInputActions(m map[string]func() Action) map[string]func() Action {
	for _, k := range InputKinds {
		u, d := k.ActionNames()
		m[u], m[d] = k.newActions()
	}
	return m
}

// InputOf is the kind of an upsert or a deletion, nil for any other action.
func InputOf(a Action) AnyInputKind { return inputByType[reflect.TypeOf(a)] }
