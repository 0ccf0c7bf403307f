package reducer

import (
	"net/netip"
	"sort"
	"time"

	"github.com/peeragent/peeragent/state"
)

// Reduce returns the State that follows s once a has happened. It is pure
// and total: it reads nothing but its arguments, never fails, never panics
// on bad input (that becomes a problem in the State) and never modifies s.
func Reduce(s state.State, a state.Action) state.State {
	t := &tx{s: s, dirty: map[string]struct{}{}, wasSynced: s.AllSynced()}
	switch a := a.(type) {
	case state.PeerUpserted:
		t.upsertPeer(&a.Peer)
	case state.PeerDeleted:
		t.deletePeer(a.Name)
	case state.NodeUpserted:
		t.upsertNode(&a.Node)
	case state.NodeDeleted:
		t.deleteNode(a.Name)
	case state.ConfigUpserted:
		t.upsertConfig(&a.Config)
	case state.ConfigDeleted:
		t.deleteConfig(a.Name)
	case state.FilterUpserted:
		t.upsertFilter(&a.Filter)
	case state.FilterDeleted:
		t.deleteFilter(a.Name)
	case state.SecretUpserted:
		t.upsertSecret(&a.Secret)
	case state.SecretDeleted:
		t.deleteSecret(a.Name)
	case state.SourceSynced:
		t.synced(a)
	case state.InputProblemsReported:
		t.inputProblems(a)
	case state.BlockAffinityUpserted:
		t.upsertAffinity(&a.Affinity)
	case state.BlockAffinityDeleted:
		t.deleteAffinity(a.Name)
	case state.IPPoolUpserted:
		t.upsertPool(&a.Pool)
	case state.IPPoolDeleted:
		t.deletePool(a.Name)
	case state.PodUpserted:
		t.upsertPod(&a.Pod)
	case state.PodDeleted:
		t.deletePod(a.Namespace + "/" + a.Name)
	default:
		return reduceResult(s, a)
	}
	return t.finish()
}

// tx is one reduce step under construction: a shallow copy of the State
// whose persistent maps are replaced as it goes, plus the addresses whose
// neighbor must be resolved again before the step ends.
type tx struct {
	s       state.State
	dirty   map[string]struct{}
	full    bool
	restart bool
	at      time.Time
	// wasSynced: every source had listed before this step, so the speaker
	// has been told about the neighbors (Diff issues nothing before).
	wasSynced bool
	// keysChanged: a neighbor gained or lost its TCP-MD5 key.
	keysChanged bool
	// paths are the prefixes (by PrefixKey) whose own path must be derived
	// again; allPaths: every one (docs/routes.md §8.1).
	paths    map[string]netip.Prefix
	allPaths bool
}

func (t *tx) markDirty(key string) { t.dirty[key] = struct{}{} }

// finish re-derives what the step invalidated, in a fixed order so that
// generations are assigned deterministically.
func (t *tx) finish() state.State {
	if t.full {
		t.rederiveAll()
		t.allPaths = true
	}
	keys := make([]string, 0, len(t.dirty))
	for k := range t.dirty {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.resolve(k)
	}
	if t.keysChanged && t.s.OptmemMax > 0 {
		t.checkKeyMemory()
	}
	t.derivePaths()
	return t.s
}
