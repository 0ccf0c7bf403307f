package reducer

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/peeragent/peeragent/state"
)

// upsertAffinity keeps this node's BlockAffinities. Another node's never
// reaches here from the watchers (docs/routes.md "Amendment to §1"); if one
// does, it counts as the deletion of that name here.
func (t *tx) upsertAffinity(a *state.BlockAffinity) {
	if a.Node != "" && a.Node != t.s.Node {
		t.deleteAffinity(a.Name)
		return
	}
	in := &t.s.Inputs
	old, had := in.Affinities.Get(a.Name)
	if had && reflect.DeepEqual(old.Spec, a) {
		return
	}
	e, probs := compileAffinity(a, t.local())
	in.Affinities = in.Affinities.Set(a.Name, e)
	t.setProblems(affinityBucket(a.Name), probs)
	t.affinityChanged(a.Name, old, e)
}

func (t *tx) deleteAffinity(name string) {
	in := &t.s.Inputs
	old, had := in.Affinities.Get(name)
	if !had {
		return
	}
	in.Affinities = in.Affinities.Delete(name)
	t.setProblems(affinityBucket(name), nil)
	t.affinityChanged(name, old, nil)
}

// affinityChanged keeps the origins index and marks the block's prefix
// dirty; when the block becomes or stops being N's, also every prefix
// inside it (borrowed addresses there are no longer, or now, borrowed).
func (t *tx) affinityChanged(name string, old, cur *state.AffinityEntry) {
	var ob, nb netip.Prefix
	if old != nil {
		ob = old.Block
	}
	if cur != nil {
		nb = cur.Block
	}
	if ob != nb {
		t.unorigin(ob, name, false)
		t.origin(nb, name, false)
	}
	ownOld, ownNew := old != nil && old.Own, cur != nil && cur.Own
	for _, b := range []netip.Prefix{ob, nb} {
		if !b.IsValid() {
			continue
		}
		t.markPath(b)
		if ob != nb || ownOld != ownNew {
			t.markInside(b)
		}
	}
}

// recheckAffinities reads this node's affinities again when its addresses
// change: whether a block covers one of them decides whether it is N's
// (docs/routes.md §11.1).
func (t *tx) recheckAffinities() {
	l := t.local()
	t.s.Inputs.Affinities.Range(func(name string, old *state.AffinityEntry) bool {
		e, probs := compileAffinity(old.Spec, l)
		t.setProblems(affinityBucket(name), probs)
		if e.Own != old.Own {
			t.s.Inputs.Affinities = t.s.Inputs.Affinities.Set(name, e)
			t.affinityChanged(name, old, e)
		}
		return true
	})
}

// compileAffinity reads one affinity (docs/routes.md §8.1 rule 1, §11.1);
// l is this node, whose addresses no block may cover.
func compileAffinity(a *state.BlockAffinity, l *state.NodeEntry) (*state.AffinityEntry, []state.Problem) {
	e := &state.AffinityEntry{Spec: a}
	var probs []state.Problem
	bad := func(format string, args ...any) {
		probs = append(probs, state.Problem{Object: affinityObject(a.Name), Reason: fmt.Sprintf(format, args...)})
	}
	if len(a.Unsupported) > 0 {
		bad("unsupported field %s: this agent cannot apply it", strings.Join(a.Unsupported, ", "))
	}
	if a.Node == "" {
		bad("spec.node is empty")
	}
	if p, err := netip.ParsePrefix(a.CIDR); err != nil {
		bad("cidr %q does not parse", a.CIDR)
	} else {
		e.Block = p.Masked()
		if why := specialOverlap(e.Block); why != "" {
			bad("cidr %s overlaps %s: not advertised and not blackholed", e.Block, why)
		} else if x := coveredAddr(e.Block, l); x.IsValid() {
			bad("cidr %s covers this node's address %s: not advertised and not blackholed", e.Block, x)
		}
	}
	deleted := false
	if a.Deleted != "" {
		d, err := strconv.ParseBool(a.Deleted)
		if err != nil {
			bad("deleted %q is neither true nor false", a.Deleted)
		}
		deleted = d
	}
	state := ""
	switch a.State {
	case "", "confirmed", "pendingDeletion":
		state = "own"
	case "pending":
	default:
		bad("state %q is not confirmed, pending, pendingDeletion or empty", a.State)
	}
	switch a.Type {
	case "", "host":
	default:
		bad("type %q is not supported (only host affinities are read)", a.Type)
	}
	e.Own = len(probs) == 0 && state == "own" && !deleted
	return e, probs
}

func (t *tx) upsertPool(p *state.IPPool) {
	in := &t.s.Inputs
	old, had := in.Pools.Get(p.Name)
	if had && reflect.DeepEqual(old.Spec, p) {
		return
	}
	e := &state.PoolEntry{Spec: p}
	if c, err := netip.ParsePrefix(p.CIDR); err == nil {
		e.CIDR = c.Masked()
		if why := specialOverlap(e.CIDR); why != "" {
			e.CIDR, e.Refused = netip.Prefix{}, fmt.Sprintf("cidr %s overlaps %s; the pool is ignored", c.Masked(), why)
		}
	}
	in.Pools = in.Pools.Set(p.Name, e)
	t.poolChanged(p.Name, old, e)
}

func (t *tx) deletePool(name string) {
	in := &t.s.Inputs
	old, had := in.Pools.Get(name)
	if !had {
		return
	}
	in.Pools = in.Pools.Delete(name)
	t.poolChanged(name, old, nil)
}

// poolChanged re-derives the paths inside the pool's old and new CIDR and
// the shared sets and problems of every pool at those CIDRs. A change of
// what no rule reads (disabled, modes) re-derives the same values and so
// costs no call (docs/routes.md §10).
func (t *tx) poolChanged(name string, old, cur *state.PoolEntry) {
	idx := &t.s.Index
	cidrs := []netip.Prefix{}
	if old != nil && old.CIDR.IsValid() {
		idx.PoolsByCIDR = idx.PoolsByCIDR.Delete(poolCIDRKey(old.CIDR, name))
		cidrs = append(cidrs, old.CIDR)
	}
	if cur != nil && cur.CIDR.IsValid() {
		idx.PoolsByCIDR = idx.PoolsByCIDR.Set(poolCIDRKey(cur.CIDR, name), name)
		cidrs = append(cidrs, cur.CIDR)
	}
	t.setProblems(poolBucket(name), nil)
	if cur != nil && !cur.CIDR.IsValid() {
		t.setProblems(poolBucket(name), poolProblems(cur, ""))
	}
	for _, c := range slices.Compact(cidrs) {
		t.poolsAt(c)
		t.markInside(c)
		t.markRoutesInside(c) // §9.8: the pool's modes decide its learned routes
	}
}

// poolsAt recomputes the pools sharing one CIDR: the smallest name wins
// and gives the shared set member; the others get a problem
// (docs/routes.md §11.2).
func (t *tx) poolsAt(c netip.Prefix) {
	var names []string
	prefix := state.PrefixKey(c) + "/"
	t.s.Index.PoolsByCIDR.RangeFrom(prefix, func(k, n string) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		names = append(names, n)
		return true
	})
	for i, n := range names {
		e, _ := t.s.Inputs.Pools.Get(n)
		winner := ""
		if i > 0 {
			winner = names[0]
		}
		t.setProblems(poolBucket(n), poolProblems(e, winner))
	}
	full := uint8(c.Addr().BitLen())
	nobgp := state.SetMember{Set: state.SetName(state.SetNoBGP, c), Prefix: c, Min: uint8(c.Bits()), Max: full}
	pools := nobgp
	pools.Set = state.SetName(state.SetPools, c)
	var w *state.PoolEntry
	if len(names) > 0 {
		w, _ = t.s.Inputs.Pools.Get(names[0])
	}
	t.setMember(nobgp, w != nil && noExport(w))
	t.setMember(pools, w != nil && !noExport(w))
}

// noExport: the pool withholds its prefixes from BGP (docs/routes.md §8.6
// rule 1), also when it has a field this agent does not read (a misspelt
// disableBGPExport must not export what the operator meant to hide: fail
// closed, as docs/semantics.md §7 does for BGPPeers).
func noExport(e *state.PoolEntry) bool { return e.Spec.DisableBGPExport || len(e.Spec.Unsupported) > 0 }

// poolProblems: bad input of a pool (docs/routes.md §11.2); winner names
// the pool that wins at the same CIDR, if another does.
func poolProblems(e *state.PoolEntry, winner string) []state.Problem {
	p := e.Spec
	var out []state.Problem
	bad := func(format string, args ...any) {
		out = append(out, state.Problem{Object: poolObject(p.Name), Reason: fmt.Sprintf(format, args...)})
	}
	if len(p.Unsupported) > 0 {
		bad("unsupported field %s: nothing in the pool is exported until it is fixed", strings.Join(p.Unsupported, ", "))
	}
	switch {
	case e.Refused != "":
		bad("%s", e.Refused) // docs/routes.md §11.2
		return out
	case !e.CIDR.IsValid():
		bad("cidr %q does not parse; the pool is ignored", p.CIDR)
		return out
	}
	if winner != "" {
		bad("same cidr %s as ippool/%s, which wins (the smallest name); this pool is ignored", e.CIDR, winner)
	}
	modes := map[string]bool{"": true, "Never": true, "Always": true, "CrossSubnet": true}
	for _, m := range []struct{ field, v string }{{"ipipMode", p.IPIPMode}, {"vxlanMode", p.VXLANMode}} {
		if !modes[m.v] {
			bad("%s %q is not Never, Always or CrossSubnet; routes in the pool are not installed", m.field, m.v)
		}
	}
	if e.CIDR.Addr().Is6() && p.IPIPMode != "" && p.IPIPMode != "Never" {
		bad("ipipMode %s on an IPv6 pool; routes in the pool are not installed", p.IPIPMode)
	}
	if on := func(m string) bool { return m != "" && m != "Never" }; on(p.IPIPMode) && on(p.VXLANMode) {
		bad("both ipipMode and vxlanMode are enabled; routes in the pool are not installed")
	}
	if len(out) == 0 && !flat(p) {
		// docs/routes.md §9.8 rule 1
		bad("pool needs ipip/vxlan encapsulation; peeragent installs only unencapsulated routes")
	}
	return out
}

func (t *tx) upsertPod(p *state.Pod) {
	in := &t.s.Inputs
	k := p.Key()
	old, had := in.Pods.Get(k)
	if had && reflect.DeepEqual(old.Spec, p) {
		return
	}
	e, probs := compilePod(p)
	in.Pods = in.Pods.Set(k, e)
	t.setProblems(podBucket(k), probs)
	t.podChanged(k, old, e)
}

func (t *tx) deletePod(k string) {
	in := &t.s.Inputs
	old, had := in.Pods.Get(k)
	if !had {
		return
	}
	in.Pods = in.Pods.Delete(k)
	t.setProblems(podBucket(k), nil)
	t.podChanged(k, old, nil)
}

func (t *tx) podChanged(k string, old, cur *state.PodEntry) {
	var oa, na []netip.Prefix
	if old != nil {
		oa = old.Addrs
	}
	if cur != nil {
		na = cur.Addrs
	}
	t.reorigin(oa, na, func(a netip.Prefix) { t.unorigin(a, k, true) },
		func(a netip.Prefix) { t.origin(a, k, true) })
}

// reorigin moves an origin from the prefixes old to cur: drop for each
// prefix only old has, add for each only cur has, each path marked.
func (t *tx) reorigin(old, cur []netip.Prefix, drop, add func(netip.Prefix)) {
	for _, p := range old {
		if !slices.Contains(cur, p) {
			drop(p)
			t.markPath(p)
		}
	}
	for _, p := range cur {
		if !slices.Contains(old, p) {
			add(p)
			t.markPath(p)
		}
	}
}

// compilePod: the addresses a pod may lend out (docs/routes.md §8.1 rule 3,
// §11.4): none for host networking or a finished pod.
func compilePod(p *state.Pod) (*state.PodEntry, []state.Problem) {
	e := &state.PodEntry{Spec: p}
	var probs []state.Problem
	for _, s := range p.PodIPs {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			probs = append(probs, state.Problem{Object: podObject(p.Key()), Reason: fmt.Sprintf("podIP %q does not parse; skipped", s)})
			continue
		}
		a = a.Unmap()
		if !p.HostNetwork && p.Phase != "Succeeded" && p.Phase != "Failed" {
			e.Addrs = append(e.Addrs, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	slices.SortFunc(e.Addrs, func(a, b netip.Prefix) int { return strings.Compare(state.PrefixKey(a), state.PrefixKey(b)) })
	e.Addrs = slices.Compact(e.Addrs)
	return e, probs
}

// origin and unorigin keep Index.Origins: name (an affinity, or a pod key
// when pod) produces prefix p, or no longer does.
func (t *tx) origin(p netip.Prefix, name string, pod bool) { t.originIn(p, name, originList(pod)) }

func (t *tx) unorigin(p netip.Prefix, name string, pod bool) {
	t.unoriginIn(p, name, originList(pod))
}

func originList(pod bool) func(*state.Origins) *[]string {
	if pod {
		return func(o *state.Origins) *[]string { return &o.Pods }
	}
	return func(o *state.Origins) *[]string { return &o.Blocks }
}

// originIn and unoriginIn: name, in the list of Origins sel picks,
// produces prefix p, or no longer does.
func (t *tx) originIn(p netip.Prefix, name string, sel func(*state.Origins) *[]string) {
	if !p.IsValid() {
		return
	}
	idx := &t.s.Index
	k := state.PrefixKey(p)
	o := &state.Origins{Prefix: p}
	if cur, ok := idx.Origins.Get(k); ok {
		c := *cur
		o = &c
	}
	list := sel(o)
	if i, found := slices.BinarySearch(*list, name); !found {
		*list = slices.Insert(slices.Clone(*list), i, name)
	}
	idx.Origins = idx.Origins.Set(k, o)
}

func (t *tx) unoriginIn(p netip.Prefix, name string, sel func(*state.Origins) *[]string) {
	if !p.IsValid() {
		return
	}
	idx := &t.s.Index
	k := state.PrefixKey(p)
	cur, ok := idx.Origins.Get(k)
	if !ok {
		return
	}
	o := *cur
	list := sel(&o)
	i := slices.Index(*list, name)
	if i < 0 {
		return
	}
	*list = slices.Delete(slices.Clone(*list), i, i+1)
	if len(o.Blocks)+len(o.Pods)+len(o.Services)+len(o.Ranges) == 0 {
		idx.Origins = idx.Origins.Delete(k)
		return
	}
	idx.Origins = idx.Origins.Set(k, &o)
}

// setMember adds or removes one member of a shared prefix set.
func (t *tx) setMember(m state.SetMember, in bool) {
	k := state.SetKey(m.Set, m.Prefix)
	old, had := t.s.Out.Sets.Get(k)
	switch {
	case in && (!had || old != m):
		t.s.Out.Sets = t.s.Out.Sets.Set(k, m)
	case !in && had:
		t.s.Out.Sets = t.s.Out.Sets.Delete(k)
	}
}

// syncSets makes the members of the sets whose keys start with one of
// bases those of want (keyed by state.SetKey), each as want has it.
func (t *tx) syncSets(want map[string]state.SetMember, bases ...string) {
	for _, base := range bases {
		var gone []state.SetMember
		t.s.Out.Sets.RangeFrom(base, func(k string, m state.SetMember) bool {
			if !strings.HasPrefix(k, base) {
				return false
			}
			if _, ok := want[k]; !ok {
				gone = append(gone, m)
			}
			return true
		})
		for _, m := range gone {
			t.setMember(m, false)
		}
	}
	for _, m := range want {
		t.setMember(m, true)
	}
}

func poolCIDRKey(c netip.Prefix, name string) string { return state.PrefixKey(c) + "/" + name }
