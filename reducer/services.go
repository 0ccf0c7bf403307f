package reducer

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// excludeLabel keeps a node from advertising service addresses
// (docs/routes.md §8.4 rule 1).
const excludeLabel = "node.kubernetes.io/exclude-from-external-load-balancers"

// Range list names: the origins of range paths.
const (
	rangeCluster  = "serviceClusterIPs"
	rangeExternal = "serviceExternalIPs"
	rangeLB       = "serviceLoadBalancerIPs"
)

func serviceObject(key string) string { return "service/" + key }
func serviceBucket(key string) string { return "service/" + key }

// excluded: this node carries the exclusion label (docs/routes.md §8.4).
func (t *tx) excluded() bool {
	l, ok := t.s.Inputs.Nodes.Get(t.s.Node)
	return ok && l.Spec.Labels[excludeLabel] == "true"
}

// compileRanges reads the service ranges of the default configuration;
// an unparsable CIDR is dropped with a problem (docs/routes.md §11.3).
func compileRanges(c *state.BGPConfiguration) (state.ServiceRanges, []state.Problem) {
	r := state.ServiceRanges{Aggregate: true}
	if c == nil {
		return r, nil
	}
	var probs []state.Problem
	read := func(field string, in []state.ServiceCIDR) []netip.Prefix {
		var out []netip.Prefix
		for _, e := range in {
			p, err := netip.ParsePrefix(e.CIDR)
			if err != nil {
				probs = append(probs, state.Problem{Object: configObject(c.Name), Reason: fmt.Sprintf("%s cidr %q does not parse; entry dropped", field, e.CIDR)})
				continue
			}
			out = append(out, p.Masked())
		}
		return out
	}
	r.ClusterIPs = read(rangeCluster, c.ServiceClusterIPs)
	r.ExternalIPs = read(rangeExternal, c.ServiceExternalIPs)
	r.LoadBalancerIPs = read(rangeLB, c.ServiceLoadBalancerIPs)
	switch c.ServiceLoadBalancerAggregation {
	case "", "Enabled":
	case "Disabled":
		r.Aggregate = false
	default:
		probs = append(probs, state.Problem{Object: configObject(c.Name), Reason: fmt.Sprintf("serviceLoadBalancerAggregation %q is not Enabled or Disabled; Enabled applies", c.ServiceLoadBalancerAggregation)})
	}
	return r, probs
}

func single(p netip.Prefix) bool { return p.Bits() == p.Addr().BitLen() }

// rangePaths: the range paths this node advertises, by prefix, with the
// lists holding each (docs/routes.md §8.4 rule 1).
func rangePaths(r state.ServiceRanges, excluded bool) map[netip.Prefix][]string {
	out := map[netip.Prefix][]string{}
	if excluded {
		return out
	}
	add := func(list string, ps []netip.Prefix, singles bool) {
		for _, p := range ps {
			if singles || !single(p) {
				out[p] = append(out[p], list)
			}
		}
	}
	add(rangeCluster, r.ClusterIPs, true)
	add(rangeExternal, r.ExternalIPs, false)
	if r.Aggregate {
		add(rangeLB, r.LoadBalancerIPs, false)
	}
	for p, l := range out {
		slices.Sort(l)
		out[p] = slices.Compact(l)
	}
	return out
}

// insideServiceRange: a learned route is never installed inside these, on
// any node (docs/routes.md §9.2 rule 5).
func insideServiceRange(r state.ServiceRanges, p netip.Prefix) bool {
	in := func(ps []netip.Prefix, singles bool) bool {
		for _, c := range ps {
			if (singles || !single(c)) && c.Addr().Is4() == p.Addr().Is4() && c.Bits() <= p.Bits() && c.Contains(p.Addr()) {
				return true
			}
		}
		return false
	}
	return in(r.ClusterIPs, true) || in(r.ExternalIPs, false) || (r.Aggregate && in(r.LoadBalancerIPs, false))
}

// refreshServices recomputes the service ranges in force and every
// service's host paths; run when the default configuration or this node
// changed. Starting or stopping the watches follows the ranges.
func (t *tx) refreshServices() {
	var def *state.BGPConfiguration
	if c, ok := t.s.Inputs.Configs.Get("default"); ok {
		def = c
	}
	r, _ := compileRanges(def)
	r.Excluded = t.excluded()
	old := t.s.Index.ServiceRanges
	before, after := rangePaths(old, old.Excluded), rangePaths(r, r.Excluded)
	t.s.Index.ServiceRanges = r
	for p, lists := range before {
		for _, l := range lists {
			if !slices.Contains(after[p], l) {
				t.unoriginIn(p, l, rangesOf)
				t.markPath(p)
			}
		}
	}
	for p, lists := range after {
		for _, l := range lists {
			if !slices.Contains(before[p], l) {
				t.originIn(p, l, rangesOf)
				t.markPath(p)
			}
		}
	}
	if !reflect.DeepEqual(rangePaths(old, false), rangePaths(r, false)) {
		for _, c := range []map[netip.Prefix][]string{rangePaths(old, false), rangePaths(r, false)} {
			for p := range c {
				t.markRoutesInside(p) // docs/routes.md §9.2 rule 5
			}
		}
	}
	t.s.Inputs.Services.Range(func(k string, _ *state.ServiceEntry) bool { t.rederiveService(k); return true })
	t.setServiceWatch(r.Any())
	t.refreshServiceSets(r)
}

// refreshServiceSets keeps the shared prefix sets of the export policy's
// service statements (docs/routes.md §8.3 rules 7-8): -svc- holds the
// ranges this node advertises, -rrsvc- (only on a node with a
// route-reflector cluster ID) every serviceLoadBalancerIPs and
// serviceExternalIPs CIDR, single addresses included.
func (t *tx) refreshServiceSets(r state.ServiceRanges) {
	want := map[string]state.SetMember{}
	add := func(base string, p netip.Prefix) {
		m := state.SetMember{Set: state.SetName(base, p), Prefix: p, Min: uint8(p.Bits()), Max: uint8(p.Addr().BitLen())}
		want[state.SetKey(m.Set, p)] = m
	}
	for p := range rangePaths(r, r.Excluded) {
		add(state.SetSvc, p)
	}
	if l := t.local(); l != nil && l.ClusterID != "" {
		for _, p := range slices.Concat(r.LoadBalancerIPs, r.ExternalIPs) {
			add(state.SetRRSvc, p)
		}
	}
	t.syncSets(want, state.SetSvc, state.SetRRSvc)
}

// setServiceWatch starts or stops the Service and EndpointSlice watches;
// stopped, what they delivered is forgotten (its paths are already gone:
// no range, no service path).
func (t *tx) setServiceWatch(on bool) {
	if on == t.s.Out.ServiceWatch {
		return
	}
	t.s.Out.ServiceWatch = on
	t.s.ServiceWatchLate = on && t.wasSynced
	if on {
		return
	}
	t.s.Inputs.Services.Range(func(k string, _ *state.ServiceEntry) bool { t.setProblems(serviceBucket(k), nil); return true })
	t.s.Inputs.Services, t.s.Inputs.EndpointSlices = pmap.New[*state.ServiceEntry](), pmap.New[*state.EndpointSlice]()
	t.s.Index.SlicesByService = pmap.New[string]()
	if t.s.Synced[state.KindService] || t.s.Synced[state.KindEndpointSlice] {
		m := make(map[state.Kind]bool, len(t.s.Synced))
		for k, v := range t.s.Synced {
			if k != state.KindService && k != state.KindEndpointSlice {
				m[k] = v
			}
		}
		t.s.Synced = m
	}
}

func (t *tx) upsertService(s *state.Service) {
	if !t.s.Out.ServiceWatch {
		return // a late event of a stopped watch
	}
	k := s.Key()
	old, had := t.s.Inputs.Services.Get(k)
	if had && reflect.DeepEqual(old.Spec, s) {
		return
	}
	e, probs := compileService(s)
	if had {
		e.Gives = old.Gives
	}
	t.s.Inputs.Services = t.s.Inputs.Services.Set(k, e)
	t.setProblems(serviceBucket(k), probs)
	t.rederiveService(k)
}

func (t *tx) deleteService(k string) {
	old, had := t.s.Inputs.Services.Get(k)
	if !had {
		return
	}
	t.s.Inputs.Services = t.s.Inputs.Services.Delete(k)
	t.setProblems(serviceBucket(k), nil)
	t.setGives(k, old.Gives, nil)
}

// compileService parses a service's addresses; an unparsable one is
// skipped with a problem (docs/routes.md §11.4).
func compileService(s *state.Service) (*state.ServiceEntry, []state.Problem) {
	e := &state.ServiceEntry{Spec: s}
	var probs []state.Problem
	parse := func(field string, in []string) []netip.Addr {
		var out []netip.Addr
		for _, v := range in {
			if v == "" || v == "None" {
				continue
			}
			a, err := netip.ParseAddr(v)
			if err != nil || a.Zone() != "" {
				probs = append(probs, state.Problem{Object: serviceObject(s.Key()), Reason: fmt.Sprintf("%s %q does not parse; skipped", field, v)})
				continue
			}
			out = append(out, a.Unmap())
		}
		return out
	}
	e.ClusterIPs = parse("clusterIP", s.ClusterIPs)
	e.ExternalIPs = parse("externalIP", s.ExternalIPs)
	e.IngressIPs = parse("ingress IP", s.IngressIPs)
	e.LBIPs = append(parse("loadBalancerIP", []string{s.LoadBalancerIP}), e.IngressIPs...)
	return e, probs
}

// rederiveService decides one service's host paths again.
func (t *tx) rederiveService(k string) {
	e, ok := t.s.Inputs.Services.Get(k)
	if !ok {
		return
	}
	gives := t.serviceGives(e)
	if slices.Equal(gives, e.Gives) {
		return
	}
	n := *e
	n.Gives = gives
	t.s.Inputs.Services = t.s.Inputs.Services.Set(k, &n)
	t.setGives(k, e.Gives, gives)
}

func (t *tx) setGives(k string, old, cur []netip.Prefix) {
	t.reorigin(old, cur, func(p netip.Prefix) { t.unoriginIn(p, k, servicesOf) },
		func(p netip.Prefix) { t.originIn(p, k, servicesOf) })
}

// serviceGives: the host paths of one service (docs/routes.md §8.4 rule 2),
// sorted by PrefixKey.
func (t *tx) serviceGives(e *state.ServiceEntry) []netip.Prefix {
	r := t.s.Index.ServiceRanges
	s := e.Spec
	if !r.Any() || r.Excluded || len(s.ClusterIPs) == 0 || s.ClusterIPs[0] == "" || s.ClusterIPs[0] == "None" {
		return nil
	}
	switch s.Type {
	case "", "ClusterIP", "NodePort", "LoadBalancer":
	default:
		return nil
	}
	local := s.ExternalTrafficPolicy == "Local"
	switch {
	case !local && (inSingle(e.LBIPs, r.LoadBalancerIPs) || inSingle(e.ExternalIPs, r.ExternalIPs)):
	case !local && r.Aggregate:
		return nil
	case !t.hasEndpoint(s, local):
		return nil
	}
	var out []netip.Prefix
	host := func(a netip.Addr) { out = append(out, netip.PrefixFrom(a, a.BitLen())) }
	if len(r.ClusterIPs) > 0 {
		for _, a := range e.ClusterIPs {
			host(a)
		}
	}
	for _, a := range e.ExternalIPs {
		if inAny(a, r.ExternalIPs) {
			host(a)
		}
	}
	for _, a := range e.IngressIPs {
		if inAny(a, r.LoadBalancerIPs) {
			host(a)
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return strings.Compare(state.PrefixKey(a), state.PrefixKey(b)) })
	return slices.Compact(out)
}

func inSingle(as []netip.Addr, ranges []netip.Prefix) bool {
	for _, a := range as {
		for _, p := range ranges {
			if single(p) && p.Addr() == a {
				return true
			}
		}
	}
	return false
}

func inAny(a netip.Addr, ranges []netip.Prefix) bool {
	for _, p := range ranges {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// hasEndpoint: a slice of the service in one of its families has an
// endpoint not marked unready, on this node when local (docs/routes.md
// §8.4 rule 2).
func (t *tx) hasEndpoint(s *state.Service, local bool) bool {
	found := false
	prefix := s.Key() + "/"
	t.s.Index.SlicesByService.RangeFrom(prefix, func(k, sk string) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		sl, _ := t.s.Inputs.EndpointSlices.Get(sk)
		if sl == nil || !slices.Contains(s.IPFamilies, sl.AddressType) {
			return true
		}
		for _, ep := range sl.Endpoints {
			if (ep.Ready == nil || *ep.Ready) && (!local || ep.NodeName == t.s.Node) {
				found = true
				return false
			}
		}
		return true
	})
	return found
}

func sliceIndexKey(sl *state.EndpointSlice) string {
	return sl.Namespace + "/" + sl.ServiceName + "/" + sl.Name
}

func (t *tx) upsertSlice(sl *state.EndpointSlice) {
	if !t.s.Out.ServiceWatch {
		return
	}
	k := sl.Key()
	old, had := t.s.Inputs.EndpointSlices.Get(k)
	if had && reflect.DeepEqual(old, sl) {
		return
	}
	t.s.Inputs.EndpointSlices = t.s.Inputs.EndpointSlices.Set(k, sl)
	t.sliceChanged(old, sl)
}

func (t *tx) deleteSlice(k string) {
	old, had := t.s.Inputs.EndpointSlices.Get(k)
	if !had {
		return
	}
	t.s.Inputs.EndpointSlices = t.s.Inputs.EndpointSlices.Delete(k)
	t.sliceChanged(old, nil)
}

// sliceChanged re-derives only the services the slice names, before and
// after (docs/routes.md §10: an endpoint change costs its service only).
func (t *tx) sliceChanged(old, cur *state.EndpointSlice) {
	idx := &t.s.Index
	var svcs []string
	if old != nil && old.ServiceName != "" {
		idx.SlicesByService = idx.SlicesByService.Delete(sliceIndexKey(old))
		svcs = append(svcs, old.Namespace+"/"+old.ServiceName)
	}
	if cur != nil && cur.ServiceName != "" {
		idx.SlicesByService = idx.SlicesByService.Set(sliceIndexKey(cur), cur.Key())
		svcs = append(svcs, cur.Namespace+"/"+cur.ServiceName)
	}
	for _, s := range slices.Compact(svcs) {
		t.rederiveService(s)
	}
}

func rangesOf(o *state.Origins) *[]string   { return &o.Ranges }
func servicesOf(o *state.Origins) *[]string { return &o.Services }
