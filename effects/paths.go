package effects

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// AddPath is GoBGP AddPath of an own path in the global table
// (docs/routes.md §8.2): NLRI, ORIGIN IGP, the next hop and communities.
// Idempotent: a path with the same NLRI replaces the previous one, so an
// attribute change is one AddPath. Gen is the path call's generation
// (state.PathCall), which the result names.
type AddPath struct {
	Path *state.Path
	Gen  uint64
}

// DeletePath is GoBGP DeletePath of an own path. Idempotent: an absent
// path is success.
type DeletePath struct {
	Prefix netip.Prefix
	Gen    uint64
}

// SetAdd is GoBGP AddDefinedSet with replace: false, adding one prefix to
// a shared prefix set in place (docs/routes.md §8.3 rule 12). Idempotent.
type SetAdd struct{ Member state.SetMember }

// SetDel is GoBGP DeleteDefinedSet with all: false, removing one prefix
// from a shared prefix set in place. Idempotent.
type SetDel struct{ Member state.SetMember }

// ResetOut is GoBGP ResetPeer soft, direction out, for one family of a
// neighbor: it re-sends what the export policy now accepts after a
// widening (docs/routes.md §8.3 rule 13, §10). Idempotent.
type ResetOut struct {
	Addr   netip.Addr
	Family string
}

func (e AddPath) String() string {
	s := fmt.Sprintf("add-path %s nh=%s", e.Path.Prefix, e.Path.NextHop)
	if len(e.Path.Communities) > 0 {
		s += " communities=" + strings.Join(e.Path.Communities, ",")
	}
	return s
}

func (e DeletePath) String() string { return "delete-path " + e.Prefix.String() }
func (e SetAdd) String() string     { return "set-add " + member(e.Member) }
func (e SetDel) String() string     { return "set-del " + member(e.Member) }
func (e ResetOut) String() string   { return fmt.Sprintf("reset-out %s %s", e.Addr, e.Family) }

func member(m state.SetMember) string {
	return fmt.Sprintf("%s %s len %d-%d", m.Set, m.Prefix, m.Min, m.Max)
}

func (AddPath) Address() netip.Addr    { return netip.Addr{} }
func (DeletePath) Address() netip.Addr { return netip.Addr{} }
func (SetAdd) Address() netip.Addr     { return netip.Addr{} }
func (SetDel) Address() netip.Addr     { return netip.Addr{} }
func (e ResetOut) Address() netip.Addr { return e.Addr }

func (e AddPath) Ref() Ref    { return Ref{Kind: KindAddPath, Gen: e.Gen} }
func (e DeletePath) Ref() Ref { return Ref{Kind: KindDeletePath, Gen: e.Gen} }
func (SetAdd) Ref() Ref       { return Ref{Kind: KindSetAdd} }
func (SetDel) Ref() Ref       { return Ref{Kind: KindSetDel} }
func (e ResetOut) Ref() Ref   { return Ref{Kind: KindResetOut, Addr: e.Addr} }

// pathEffects are the set and path changes between two States
// (docs/routes.md §10): set additions and add-paths go before the
// neighbors, delete-paths, set removals and reset-outs after them. With a
// nil base (a fresh or restarted server) everything is added.
type pathEffects struct {
	setAdd, addPath, delPath, setDel []Effect
	// widened: families whose export-enabled pools set gained a member.
	widened map[string]bool
}

// Most steps change neither map: then nothing is walked or allocated.
func diffPaths(prevPaths, nextPaths *pmap.Map[*state.Path], prevSets, nextSets *pmap.Map[state.SetMember], calls *pmap.Map[*state.PathCall]) pathEffects {
	var pe pathEffects
	if prevSets != nextSets {
		pe.setAdd, pe.setDel, pe.widened = setChanges(prevSets, nextSets)
	}
	if prevPaths != nextPaths {
		pe.addPath, pe.delPath = pathChanges(prevPaths, nextPaths, calls)
	}
	return pe
}

// setChanges are the set additions and removals, and the families they
// widen.
func setChanges(prevSets, nextSets *pmap.Map[state.SetMember]) (add, del []Effect, widened map[string]bool) {
	widen := func(p netip.Prefix) {
		if widened == nil {
			widened = map[string]bool{}
		}
		widened[state.PrefixFamily(p)] = true
	}
	pmap.Diff(prevSets, nextSets, func(a, b state.SetMember) bool { return a == b },
		func(_ string, o state.SetMember, had bool, n state.SetMember, has bool) {
			if had && (!has || o != n) {
				del = append(del, SetDel{Member: o})
				if serviceSet(o.Set) && prevSets != nil {
					widen(o.Prefix) // narrowed: a soft reset out withdraws (docs/routes.md §8.3 rule 13)
				}
			}
			if has && (!had || o != n) {
				add = append(add, SetAdd{Member: n})
				if (strings.HasPrefix(n.Set, state.SetPools) || serviceSet(n.Set)) && prevSets != nil {
					widen(n.Prefix)
				}
			}
		})
	return add, del, widened
}

// pathChanges are the add-paths and delete-paths, with the generations of
// their calls.
func pathChanges(prevPaths, nextPaths *pmap.Map[*state.Path], calls *pmap.Map[*state.PathCall]) (add, del []Effect) {
	gen := func(p netip.Prefix) uint64 {
		if c, ok := calls.Get(state.PrefixKey(p)); ok {
			return c.Gen
		}
		return 0
	}
	pmap.Diff(prevPaths, nextPaths, func(a, b *state.Path) bool { return a.SameAttrs(b) },
		func(_ string, o *state.Path, had bool, n *state.Path, has bool) {
			switch {
			case has && (!had || !o.SameAttrs(n)):
				add = append(add, AddPath{Path: n, Gen: gen(n.Prefix)})
			case had && !has:
				del = append(del, DeletePath{Prefix: o.Prefix, Gen: gen(o.Prefix)})
			}
		})
	return add, del
}

// serviceSet: a set of the service statements (docs/routes.md §8.3 rules
// 7-8) or of the community statements (rule 3), whose change in either
// direction changes what learned routes go out, or with which communities.
func serviceSet(name string) bool {
	return strings.HasPrefix(name, state.SetSvc) || strings.HasPrefix(name, state.SetRRSvc) ||
		strings.HasPrefix(name, state.SetComm)
}

// resetOuts: one soft reset out per active neighbor of a widened family.
func resetOuts(widened map[string]bool, neighbors *pmap.Map[*state.Neighbor]) []Effect {
	if len(widened) == 0 {
		return nil
	}
	var out []Effect
	neighbors.Range(func(_ string, n *state.Neighbor) bool {
		for _, f := range n.Families {
			if n.Active() && widened[f] {
				out = append(out, ResetOut{Addr: n.Address, Family: f})
			}
		}
		return true
	})
	return out
}

// retryPaths: the calls of failed own paths whose retry came due
// (state.PathCall.Retry bumped), again under their generation.
func (pe *pathEffects) retryPaths(prev, next *pmap.Map[*state.PathCall], paths *pmap.Map[*state.Path]) {
	if prev != next { // (a step that changes no call allocates nothing here)
		pe.addPath, pe.delPath = retriedPaths(prev, next, paths, pe.addPath, pe.delPath)
	}
}

// retriedPaths appends the calls retryPaths finds to add and del.
func retriedPaths(prev, next *pmap.Map[*state.PathCall], paths *pmap.Map[*state.Path], add, del []Effect) ([]Effect, []Effect) {
	pmap.Diff(prev, next, same, func(k string, o *state.PathCall, had bool, n *state.PathCall, has bool) {
		if !had || !has || n.Gen != o.Gen || n.Retry <= o.Retry || n.Phase != state.RoutePhasePending {
			return
		}
		if n.Op == state.PathOpDelete {
			del = append(del, DeletePath{Prefix: n.Prefix, Gen: n.Gen})
		} else if p, ok := paths.Get(k); ok {
			add = append(add, AddPath{Path: p, Gen: n.Gen})
		}
	})
	return add, del
}
