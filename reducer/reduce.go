package reducer

import (
	"net/netip"
	"sort"
	"time"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// Reduce returns the State that follows s once a has happened. It is pure
// and total: it reads nothing but its arguments, never fails, never panics
// on bad input (that becomes a problem in the State) and never modifies s.
func Reduce(s state.State, a state.Action) state.State {
	// AllSynced is a map lookup per gating kind: asked once for both.
	synced := s.AllSynced()
	t := &tx{s: s, dirty: map[string]struct{}{}, wasSynced: synced, wasReady: synced && s.Routing.Listed /* RoutesReady */}
	switch a := a.(type) {
	case state.SourceSynced:
		t.synced(a)
	case state.InputProblemsReported:
		t.inputProblems(a)
	default:
		if in := state.InputOf(a); in != nil {
			t.reduceInput(in.Kind(), a) // an upsert or a deletion (kinds.go)
		} else if !t.fact(a) {
			return reduceResult(s, a)
		}
	}
	return t.finish()
}

// fact reduces what the speaker, the dataplane and the alarm report about
// the routes and the time (docs/routes.md §9.1, §9.6, §9.7 rule 6;
// docs/design.md "Time"); false for any other action.
func (t *tx) fact(a state.Action) bool {
	switch a := a.(type) {
	case state.BestPathsChanged:
		t.bestPaths(a)
	case state.EndOfRIBReceived:
		t.endOfRIB(a)
	case state.Tick:
		t.tick(a)
		t.fireRetries()
	case state.RoutesListed:
		t.routesListed(a)
	case state.RoutesRescanned:
		t.routesRescanned(a)
	default:
		return false
	}
	return true
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
	// routes are the prefixes whose route must be derived again, in any
	// order, repeated or not (docs/routes.md §9.2); wasReady: route calls
	// were already made before this step.
	routes   []markedRoute
	wasReady bool
	// ready: the table is live (RoutesReady), set by routesDone before it
	// derives the marked routes: nothing after changes it (the settle check
	// and the rescan clock read it).
	ready bool
	// routeEdits are the route table's changes while routesDone derives
	// the marked routes, made in one batch.
	routeEdits []pmap.Edit[*state.TableRoute]
	// services: the service ranges and every service's host paths must be
	// derived again (docs/routes.md §8.4).
	services bool
	// pools caches the winners of the pool index for poolOf.
	pools poolCache
	// refused is the step's change of the refusal counts (docs/routes.md
	// §9.2 rule 8), applied by routesDone.
	refused map[state.Refusal]int
	// subnets caches this node's IPv4 and IPv6 subnets for the step's
	// route derivations (routesDone); reset when it starts.
	subnets [2]cachedSubnet
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
	before := t.s.Out.Neighbors
	for _, k := range keys {
		t.resolve(k)
	}
	t.neighborRoutes(before, keys)
	if len(t.s.Routing.Stale) > 0 {
		t.staleNeighbors() // docs/routes.md §9.5 rule 2
	}
	if t.keysChanged && t.s.OptmemMax > 0 {
		t.checkKeyMemory()
	}
	if t.full || t.services {
		t.refreshServices()
	}
	all := t.allPaths
	t.derivePaths()
	t.routesDone(all)
	t.dropStaleRetries()
	return t.s
}

// neighborRoutes marks the host routes of the neighbors that changed:
// their reachableBy routes are entries of the route table, and win over a
// learned route for the same prefix (docs/routes.md §9.2 rule 7, §9.7
// rule 3); and, of a neighbor that comes or goes, the learned prefixes
// that cover its address too closely (§9.2 rule 8).
func (t *tx) neighborRoutes(before *pmap.Map[*state.Neighbor], keys []string) {
	for _, k := range keys {
		o, _ := before.Get(k)
		n, _ := t.s.Out.Neighbors.Get(k)
		if o == n {
			continue
		}
		for _, x := range []*state.Neighbor{o, n} {
			if x == nil {
				continue
			}
			if x.ReachableBy.IsValid() {
				t.markRoute(hostPrefix(x.Address))
			}
			if o == nil || n == nil || o.Address != n.Address {
				t.markNeighborCovers(x.Address) // §9.2 rule 8
			}
		}
	}
}
