package reducer

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/peeragent/peeragent/state"
)

// The action generator of the property test and the fuzz target: random
// actions over a small universe, so that names, addresses, selectors and
// secrets collide often. Every object it emits is freshly allocated (the
// State keeps pointers into actions, so nothing may be shared and changed).

// chooser is the source of every choice: *rand.Rand in the property test,
// the fuzz input's bytes in FuzzReduce.
type chooser interface{ IntN(n int) int }

// bytesChooser reads one byte per choice; once empty it always answers 0.
type bytesChooser struct{ b []byte }

func (c *bytesChooser) IntN(n int) int {
	if n <= 1 || len(c.b) == 0 {
		return 0
	}
	v := int(c.b[0])
	c.b = c.b[1:]
	return v % n
}

const localNode = "node-a"

var (
	nodeNames   = []string{"node-a", "node-b", "node-c", "node-d", "node-e", "node-ab"}
	peerNames   = []string{"peer-1", "peer-2", "peer-3", "peer-4", "peer-5", "peer-10"}
	filterNames = []string{"filter-1", "filter-2", "filter-3"}
	secretNames = []string{"secret-1", "secret-2", "secret-3"}
	secretKeys  = []string{"k1", "k2", "k3"}
	// passwordTexts never occur in any other generated text, so finding one
	// in a dump or an effect is a leak.
	passwordTexts = []string{"Pw-Alpha-7q", "Pw-Bravo-8q", "Pw-Charlie-9q", "Pw-Delta-0q"}
	// node i's own addresses; 10.0.0.10 and 10.0.0.9 sort against Calico's
	// string order.
	nodeV4 = []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.10", "10.0.0.9", "10.0.0.6"}
	nodeV6 = []string{"fd00::1", "fd00::2", "fd00::3", "fd00::a", "fd00::9", "fd00::6"}
	// other peerIP texts: external routers, non-canonical and mapped forms.
	otherIPs = []string{"192.0.2.1", "2001:db8::1", "FD00:0::2", "::ffff:10.0.0.2", "192.0.2.1:1790", "[2001:db8::1]:1790", "[fd00::3]:1790", "10.0.0.3:1790"}
	badIPs   = []string{"tor.example", "10.0.0.300", "10.0.0.2:0", "fe80::1%eth0", ""}
	// the advertising inputs (docs/routes.md §8): blocks that collide,
	// nest in pools, lie outside them or carry host bits; pods whose
	// addresses fall in own blocks, others' blocks or no pool.
	affinityNames = []string{"aff-1", "aff-2", "aff-3", "aff-4"}
	poolNames     = []string{"pool-1", "pool-2", "pool-3"}
	podNames      = []string{"pod-1", "pod-2", "pod-3"}
	serviceNames  = []string{"svc-1", "svc-2", "svc-3"}
	sliceNames    = []string{"slice-1", "slice-2", "slice-3", "slice-4"}
	blockCIDRs    = []string{"10.244.1.0/26", "10.244.2.0/26", "10.244.1.9/26", "fd00:244::/122", "10.245.0.0/26", "10.244.1.0/24", "bad"}
	poolCIDRs     = []string{"10.244.0.0/16", "10.244.1.0/24", "10.244.0.0/16", "fd00:244::/48", "10.244.2.0/26", "nope"}
	podIPs        = []string{"10.244.2.7", "10.244.1.9", "10.245.0.5", "fd00:244::7", "10.244.7.7", "bad-ip"}
	selectors     = []string{"rack == 'r1'", "rack == 'r2'", "role == 'rr'", "has(role)", "!has(role)", "all()",
		"rack in {'r1','r2'}", "zone == 'z1' && role != 'rr'", "rack ==", "has(rack"}
)

type gen struct {
	c       chooser
	results bool // also emit executor and speaker results
}

func (g *gen) pick(xs ...string) string { return xs[g.c.IntN(len(xs))] }
func (g *gen) chance(pct int) bool      { return g.c.IntN(100) < pct }

func (g *gen) options() state.Options {
	var o state.Options
	if g.chance(20) {
		o.TTLExactHop = true
	}
	if g.chance(20) {
		o.ExtraFamilies = []string{"ipv4-srpolicy", "l3vpn-ipv6-unicast"}
	}
	if g.chance(70) {
		o.RouteRescan = state.Duration{Duration: 30 * time.Second}
	}
	if g.chance(50) {
		o.RouteSettleMax = state.Duration{Duration: time.Duration(1+g.c.IntN(600)) * time.Second}
	}
	return o
}

func (g *gen) nodeName() string {
	if g.chance(90) {
		return nodeNames[g.c.IntN(5)]
	}
	return nodeNames[5]
}

// action returns the next action; s is the State it will be applied to.
func (g *gen) action(s state.State) state.Action {
	if g.results && g.chance(30) {
		return g.result(s)
	}
	if g.chance(8) {
		return g.bestPaths(s)
	}
	if g.results && g.chance(4) {
		return g.rescan(s)
	}
	switch g.c.IntN(30) {
	case 0, 1, 2:
		return state.NodeUpserted{Node: g.node(g.nodeName())}
	case 3:
		return state.NodeDeleted{Name: g.nodeName()}
	case 4, 5, 6:
		return state.PeerUpserted{Peer: g.peer(g.pick(peerNames...))}
	case 7:
		return state.PeerDeleted{Name: g.pick(peerNames...)}
	case 8, 9:
		return state.ConfigUpserted{Config: g.config(g.configName())}
	case 10:
		return state.ConfigDeleted{Name: g.configName()}
	case 11:
		return state.FilterUpserted{Filter: g.filter(g.pick(filterNames...))}
	case 12:
		return state.FilterDeleted{Name: g.pick(filterNames...)}
	case 13:
		return state.SecretUpserted{Secret: g.secret(g.pick(secretNames...))}
	case 14:
		return state.SecretDeleted{Name: g.pick(secretNames...)}
	case 15, 16:
		return g.synced(s)
	case 17:
		return g.inputProblems()
	case 18, 26, 27:
		if g.chance(25) {
			return state.ServiceDeleted{Namespace: "ns", Name: g.pick(serviceNames...)}
		}
		return state.ServiceUpserted{Service: g.service(g.pick(serviceNames...))}
	case 19, 28, 29:
		if g.chance(25) {
			return state.EndpointSliceDeleted{Namespace: "ns", Name: g.pick(sliceNames...)}
		}
		return state.EndpointSliceUpserted{Slice: g.slice(g.pick(sliceNames...))}
	case 20, 21:
		return state.BlockAffinityUpserted{Affinity: g.affinity(g.pick(affinityNames...))}
	case 22:
		return state.BlockAffinityDeleted{Name: g.pick(affinityNames...)}
	case 23:
		if g.chance(30) {
			return state.IPPoolDeleted{Name: g.pick(poolNames...)}
		}
		return state.IPPoolUpserted{Pool: g.pool(g.pick(poolNames...))}
	case 24:
		return state.PodUpserted{Pod: g.pod(g.pick(podNames...))}
	case 25:
		return state.PodDeleted{Namespace: "ns", Name: g.pick(podNames...)}
	default:
		return state.NodeUpserted{Node: g.node(g.nodeName())}
	}
}

// rescan is a rescan's timer or its listing (docs/routes.md §9.7 rule
// 6): mostly the table's routes, some missing or changed, a stray one,
// sometimes for a stale rescan or a failed listing.
func (g *gen) rescan(s state.State) state.Action {
	if g.chance(40) { // the alarm of a rescan, or too early for one
		return state.Tick{At: s.Routing.RescanAt.Add(time.Duration(g.c.IntN(3)-1) * time.Second)}
	}
	a := state.RoutesRescanned{Seq: s.Routing.Rescan, Dataplane: g.pick("linux", "linux", "vpp", "none")}
	if g.chance(15) {
		a.Seq += uint64(g.c.IntN(3)) - 1
	}
	if g.chance(10) {
		a.Error = "dump interrupted"
		return a
	}
	s.Out.Routes.Range(func(_ string, r *state.TableRoute) bool {
		t := r.Target()
		switch {
		case t == nil || g.chance(10):
		case g.chance(10):
			a.Routes = append(a.Routes, state.Route{Prefix: t.Prefix, Via: []netip.Addr{netip.MustParseAddr("10.0.0.99")}})
		default:
			a.Routes = append(a.Routes, *t)
		}
		return true
	})
	if g.chance(30) {
		a.Routes = append(a.Routes, state.Route{Prefix: netip.MustParsePrefix("10.99.0.0/24"), Drop: true})
	}
	return a
}

func (g *gen) node(name string) state.Node {
	i := slices.Index(nodeNames, name)
	n := state.Node{Name: name, Labels: map[string]string{}}
	if g.chance(70) {
		n.Labels["rack"] = g.pick("r1", "r2")
	}
	if g.chance(40) {
		n.Labels["role"] = g.pick("rr", "worker")
	}
	if g.chance(30) {
		n.Labels["zone"] = "z1"
	}
	fam := g.c.IntN(10) // 0-4 dual stack, 5-6 IPv4, 7-8 IPv6, 9 none
	if fam <= 6 {
		n.IPv4Address = g.nodeAddr(nodeV4, i, "/24", "10.0.0.300/24", "fd00::7/64")
	}
	if fam <= 4 || fam == 7 || fam == 8 {
		n.IPv6Address = g.nodeAddr(nodeV6, i, "/64", "fd00::zz/64", "10.0.0.7/24")
	}
	if g.chance(25) {
		n.ASNumber = g.pick("64512", "64513", "65000", " 64513", "0", "abc", "4294967296", "0.64513", "1.65536")
	}
	if g.chance(20) {
		n.RRClusterID = g.pick("1.0.0.1", "1.0.0.1", "1.0.0.2", "bogus")
	}
	if g.chance(15) {
		n.Labels["node.kubernetes.io/exclude-from-external-load-balancers"] = g.pick("true", "false")
	}
	return n
}

// service and slice are the inputs of docs/routes.md §8.4: addresses in
// and out of the generated ranges, both policies, unparsable text.
func (g *gen) service(name string) state.Service {
	s := state.Service{Namespace: "ns", Name: name, Type: g.pick("ClusterIP", "LoadBalancer", "LoadBalancer", "NodePort", "ExternalName", ""),
		ExternalTrafficPolicy: g.pick("Cluster", "Local", ""), IPFamilies: []string{g.pick("IPv4", "IPv4", "IPv6")}}
	if !g.chance(10) {
		s.ClusterIPs = []string{g.pick("10.96.0.10", "10.96.0.10", "10.96.0.11", "10.96.0.11", "None", "fd00:96::10", "bad")}
	}
	for range g.c.IntN(2) {
		s.ExternalIPs = append(s.ExternalIPs, g.pick("203.0.113.1", "203.0.113.2", "198.51.100.9"))
	}
	for range 1 + g.c.IntN(2) {
		s.IngressIPs = append(s.IngressIPs, g.pick("198.51.100.5", "198.51.100.9", "198.51.100.9", "203.0.113.1", "x"))
	}
	return s
}

func (g *gen) slice(name string) state.EndpointSlice {
	sl := state.EndpointSlice{Namespace: "ns", Name: name, ServiceName: g.pick(append([]string{""}, serviceNames...)...),
		AddressType: g.pick("IPv4", "IPv4", "IPv6")}
	for range 1 + g.c.IntN(2) {
		ep := state.Endpoint{NodeName: g.pick(localNode, localNode, g.nodeName())}
		if g.chance(50) {
			r := g.chance(60)
			ep.Ready = &r
		}
		sl.Endpoints = append(sl.Endpoints, ep)
	}
	return sl
}

// serviceRanges sets the service fields of a default configuration.
func (g *gen) serviceRanges(c *state.BGPConfiguration) {
	cidrs := func(xs ...string) []state.ServiceCIDR {
		var out []state.ServiceCIDR
		for range 1 + g.c.IntN(2) {
			out = append(out, state.ServiceCIDR{CIDR: g.pick(xs...)})
		}
		return out
	}
	c.ServiceClusterIPs = cidrs("10.96.0.0/12", "10.96.0.10/32", "fd00:96::/108", "bad")
	c.ServiceExternalIPs = cidrs("203.0.113.0/24", "203.0.113.1/32")
	c.ServiceLoadBalancerIPs = cidrs("198.51.100.0/24", "198.51.100.9/32")
	c.ServiceLoadBalancerAggregation = g.pick("", "Enabled", "Disabled", "Sometimes")
}

// nodeAddr is mostly the node's own address, sometimes another node's (a
// shared address), sometimes malformed or of the wrong family.
func (g *gen) nodeAddr(pool []string, i int, suffix, malformed, wrongFamily string) string {
	a := pool[i]
	if g.chance(15) {
		a = g.pick(pool...)
	}
	switch g.c.IntN(25) {
	case 0:
		return malformed
	case 1:
		return wrongFamily
	case 2, 3:
		return a
	case 4:
		return a + "/32"
	}
	return a + suffix
}

func (g *gen) peer(name string) state.BGPPeer {
	p := state.BGPPeer{Name: name}
	switch side := g.c.IntN(10); {
	case side <= 3: // global
	case side <= 6:
		p.Node = g.nodeName()
	case side <= 8:
		p.NodeSelector = g.pick(selectors...)
	default:
		p.Node, p.NodeSelector = g.nodeName(), g.pick(selectors...)
	}
	switch target := g.c.IntN(10); {
	case target <= 5:
		p.PeerIP = g.peerIP()
		p.ASNumber = []int64{64512, 64513, 65000, 64512, 0, 4294967296}[g.c.IntN(6)]
	case target <= 8:
		p.PeerSelector = g.pick(selectors...)
	default:
		p.PeerIP = g.pick(badIPs...)
		p.PeerSelector = g.pick("", "has(rack)")
		p.ASNumber = []int64{0, 64513}[g.c.IntN(2)]
	}
	if g.chance(25) {
		p.ReversePeering = g.pick("Manual", "Manual", "Auto", "Sometimes")
	}
	if g.chance(40) {
		p.Password = g.ref()
	}
	if g.chance(30) {
		p.Filters = []string{g.pick(filterNames...)}
		if g.chance(40) {
			p.Filters = append(p.Filters, g.pick("filter-1", "filter-2", "filter-3", "filter-missing"))
		}
	}
	g.peerSettings(&p)
	return p
}

func (g *gen) peerIP() string {
	if g.chance(60) {
		if g.chance(60) {
			return g.pick(nodeV4...)
		}
		return g.pick(nodeV6...)
	}
	return g.pick(otherIPs...)
}

func (g *gen) peerSettings(p *state.BGPPeer) {
	if g.chance(15) {
		p.ReachableBy = g.pick("10.0.0.254", "fd00::fe", "10.0.0.254", "gw")
	}
	if g.chance(15) {
		p.TTLSecurity = []int32{1, 5, 1, 300}[g.c.IntN(4)]
	}
	if g.chance(15) {
		p.LocalASNumber = []int64{65100, 64512, 65100, -1}[g.c.IntN(4)]
	}
	if g.chance(10) {
		p.SourceAddress = g.pick("None", "UseNodeIP", "Elsewhere")
	}
	if g.chance(10) {
		p.NextHopMode = g.pick("Self", "Keep", "Auto")
	}
	if g.chance(10) {
		p.KeepOriginalNextHop = true
	}
	if g.chance(10) {
		p.MaxRestartTime = &state.Duration{Duration: 90 * time.Second}
	}
	if g.chance(10) {
		p.KeepaliveTime = &state.Duration{Duration: []time.Duration{10 * time.Second, 90 * time.Second}[g.c.IntN(2)]}
	}
	if g.chance(5) {
		p.NumAllowedLocalASNumbers = []int32{2, 11}[g.c.IntN(2)]
	}
}

func (g *gen) ref() *state.SecretKeyRef {
	return &state.SecretKeyRef{Name: g.pick(secretNames...), Key: g.pick(secretKeys...), Optional: g.chance(30)}
}

func (g *gen) configName() string {
	return g.pick("default", "default", "default", "node.node-a", "node.node-b", "node.node-c", "bogus")
}

func (g *gen) config(name string) state.BGPConfiguration {
	c := state.BGPConfiguration{Name: name}
	if g.chance(30) {
		c.ListenPort = []int32{179, 1790, 1791, 70000}[g.c.IntN(4)]
	}
	if g.chance(30) {
		c.LogSeverityScreen = g.pick("Info", "Debug")
	}
	if name == "default" || name == "node.node-a" {
		g.communities(&c)
	}
	if name == "default" && g.chance(80) {
		g.serviceRanges(&c)
	}
	if name != "default" && !g.chance(10) {
		return c
	}
	if g.chance(40) {
		c.ASNumber = []int64{64512, 64513, 65000, -1}[g.c.IntN(4)]
	}
	if g.chance(60) {
		on := g.chance(50)
		c.NodeToNodeMeshEnabled = &on
	}
	if g.chance(30) {
		c.NodeMeshPassword = g.ref()
	}
	if g.chance(20) {
		c.NodeMeshMaxRestartTime = &state.Duration{Duration: 30 * time.Second}
	}
	return c
}

func (g *gen) filter(name string) state.BGPFilter {
	f := state.BGPFilter{Name: name}
	for _, l := range []struct {
		rules *[]state.FilterRule
		v6    bool
	}{{&f.ExportV4, false}, {&f.ImportV4, false}, {&f.ExportV6, true}, {&f.ImportV6, true}} {
		for range g.c.IntN(3) {
			*l.rules = append(*l.rules, g.rule(l.v6))
		}
	}
	return f
}

func (g *gen) rule(v6 bool) state.FilterRule {
	r := state.FilterRule{Action: g.pick("Accept", "Reject")}
	if g.chance(60) {
		r.CIDR = g.pick("10.1.0.0/16", "10.2.0.0/24")
		if v6 {
			r.CIDR = g.pick("fd10::/48", "fd20::/64")
		}
		r.MatchOperator = g.pick("Equal", "NotEqual", "In", "NotIn")
		if g.chance(20) {
			r.PrefixLength = &state.PrefixLength{Min: 24, Max: 28}
		}
	}
	if g.chance(10) {
		r.Source = "RemotePeers"
	}
	switch g.c.IntN(16) { // occasionally a rule that invalidates the filter
	case 0:
		r.Interface = "eth0"
	case 1:
		r.CIDR, r.MatchOperator = "10.1.0.0/99", "In"
	case 2:
		r.Action = "Drop"
	}
	return r
}

func (g *gen) affinity(name string) state.BlockAffinity {
	a := state.BlockAffinity{Name: name, Node: localNode, CIDR: g.pick(blockCIDRs...),
		State: g.pick("confirmed", "confirmed", "", "pending", "pendingDeletion", "bogus")}
	if g.chance(10) {
		a.Node = g.pick("", "node-b")
	}
	if g.chance(40) {
		a.Deleted = g.pick("false", "false", "true", "yes")
	}
	if g.chance(10) {
		a.Type = g.pick("host", "virtual")
	}
	return a
}

func (g *gen) pool(name string) state.IPPool {
	p := state.IPPool{Name: name, CIDR: g.pick(poolCIDRs...), DisableBGPExport: g.chance(30), Disabled: g.chance(20)}
	if g.chance(20) {
		p.IPIPMode = g.pick("Always", "CrossSubnet", "Never", "Sometimes")
	}
	return p
}

func (g *gen) pod(name string) state.Pod {
	p := state.Pod{Namespace: "ns", Name: name, HostNetwork: g.chance(10), Phase: g.pick("Running", "Running", "Pending", "Succeeded")}
	for range g.c.IntN(3) {
		p.PodIPs = append(p.PodIPs, g.pick(podIPs...))
	}
	return p
}

// communities sets the communities fields (docs/routes.md §8.5) of the
// configurations that carry them.
func (g *gen) communities(c *state.BGPConfiguration) {
	if g.chance(50) {
		c.Communities = []state.Community{{Name: "c1", Value: g.pick("65000:1", "65000:0:7", "70000:1")}}
	}
	if g.chance(50) {
		list := []state.PrefixAdvertisement{}
		for range g.c.IntN(3) {
			list = append(list, state.PrefixAdvertisement{CIDR: g.pick("10.244.0.0/16", "10.244.1.0/24", "fd00:244::/48", "bad"),
				Communities: []string{g.pick("65000:100", "c1", "missing", "1:2:3", "65000:0:7")}})
		}
		c.PrefixAdvertisements = &list
	}
}

func (g *gen) secret(name string) state.Secret {
	sec := state.Secret{Name: name, Data: map[string]state.Password{}}
	for _, k := range secretKeys {
		if g.chance(60) {
			sec.Data[k] = state.NewPassword(g.pick(passwordTexts...))
		}
	}
	return sec
}

func (g *gen) inputProblems() state.Action {
	a := state.InputProblemsReported{Source: g.pick("file/a.yaml", "file/b.yaml")}
	for range g.c.IntN(3) {
		a.Problems = append(a.Problems, state.Problem{Object: a.Source, Reason: g.pick("unparsable manifest", "unknown kind")})
	}
	return a
}

// synced is a complete list of one kind: the objects already held (an
// identical relist), those with one changed, or a fresh random list.
func (g *gen) synced(s state.State) state.Action {
	kinds := []state.Kind{state.KindNode, state.KindBGPPeer, state.KindBGPConfiguration, state.KindBGPFilter, state.KindSecret,
		state.KindBlockAffinity, state.KindIPPool, state.KindPod, state.KindService, state.KindEndpointSlice}
	a := state.SourceSynced{Kind: kinds[g.c.IntN(len(kinds))]}
	cur := ObjectsOf(s)
	mode := g.c.IntN(4)
	keep := func(string) bool { return mode == 0 || (mode == 1 && !g.chance(30)) }
	fresh := func() bool { return mode >= 2 && g.chance(50) }
	switch a.Kind {
	case state.KindNode:
		a.Nodes = relist(cur.Nodes, nodeNames, func(n state.Node) string { return n.Name }, keep, fresh, g.node)
	case state.KindBGPPeer:
		a.Peers = relist(cur.Peers, peerNames, func(p state.BGPPeer) string { return p.Name }, keep, fresh, g.peer)
	case state.KindBGPConfiguration:
		names := []string{"default", "node.node-a", "node.node-b", "node.node-c", "bogus"}
		a.Configs = relist(cur.Configs, names, func(c state.BGPConfiguration) string { return c.Name }, keep, fresh, g.config)
	case state.KindBGPFilter:
		a.Filters = relist(cur.Filters, filterNames, func(f state.BGPFilter) string { return f.Name }, keep, fresh, g.filter)
	case state.KindSecret:
		a.Secrets = relist(cur.Secrets, secretNames, func(x state.Secret) string { return x.Name }, keep, fresh, g.secret)
	case state.KindBlockAffinity:
		a.Affinities = relist(cur.Affinities, affinityNames, func(x state.BlockAffinity) string { return x.Name }, keep, fresh, g.affinity)
	case state.KindIPPool:
		a.Pools = relist(cur.Pools, poolNames, func(x state.IPPool) string { return x.Name }, keep, fresh, g.pool)
	case state.KindPod:
		a.Pods = relist(cur.Pods, podNames, func(x state.Pod) string { return x.Name }, keep, fresh, g.pod)
	case state.KindService:
		a.Services = relist(cur.Services, serviceNames, func(x state.Service) string { return x.Name }, keep, fresh, g.service)
	case state.KindEndpointSlice:
		a.EndpointSlices = relist(cur.EndpointSlices, sliceNames, func(x state.EndpointSlice) string { return x.Name }, keep, fresh, g.slice)
	}
	return a
}

// relist keeps the current objects keep approves (the others are changed
// or dropped), then adds a fresh object for every name fresh approves.
func relist[T any](cur []T, names []string, name func(T) string, keep func(string) bool, fresh func() bool, mk func(string) T) []T {
	var out []T
	seen := map[string]bool{}
	for _, o := range cur {
		if keep(name(o)) {
			out = append(out, o)
			seen[name(o)] = true
		}
	}
	for _, n := range names {
		if !seen[n] && fresh() {
			out = append(out, mk(n))
		}
	}
	return out
}

// result is what an executor or the speaker reports for a current session,
// sometimes for a stale generation.
func (g *gen) result(s state.State) state.Action {
	var sessions []*state.Session
	s.Out.Sessions.Range(func(_ string, x *state.Session) bool { sessions = append(sessions, x); return true })
	addr, gen := netip.MustParseAddr("10.0.0.2"), uint64(1)
	if len(sessions) > 0 {
		x := sessions[g.c.IntN(len(sessions))]
		addr, gen = x.Address, x.Gen
	}
	if g.chance(15) { // stale: the generation before or after
		gen = gen + 1 - uint64(g.c.IntN(3))
	}
	at := time.Unix(1_700_000_000+int64(g.c.IntN(1000)), 0).UTC()
	switch g.c.IntN(10) {
	case 7:
		return state.ServerApplied{Server: s.Server, At: at}
	case 8:
		return state.Tick{At: at.Add(time.Duration(g.c.IntN(300)) * time.Second)}
	case 0, 1, 2:
		return state.PeerApplied{Address: addr, Gen: gen, At: at}
	case 3:
		return state.PeerApplyFailed{Address: addr, Gen: gen, Error: fmt.Sprintf("add peer %s: boom", addr), At: at}
	case 4: // the alarm of the first retry, or too early for it
		d, _ := s.FirstRetry()
		return state.Tick{At: d.At.Add(time.Duration(g.c.IntN(3)-1) * time.Millisecond)}
	case 5:
		return state.TableRouteApplied{Prefix: netip.PrefixFrom(addr, addr.BitLen()), Gen: gen, Skipped: g.chance(50)}
	case 6:
		return state.TableRouteApplyFailed{Prefix: netip.PrefixFrom(addr, addr.BitLen()), Gen: gen, Error: "vpp: no route"}
	}
	st := g.pick("idle", "connect", "active", "opensent", "openconfirm", "established", "established")
	return state.SessionStateChanged{Address: addr, State: st, Reason: strings.Repeat("peer reset", g.c.IntN(2)), At: at}
}

// bestPaths is a best-path event (docs/routes.md §9.1), mostly of the
// running speaker, some stale; prefixes own, borrowed and outside pools,
// next hops good, self, link-local, of the other family or none.
func (g *gen) bestPaths(s state.State) state.Action {
	a := state.BestPathsChanged{Gen: s.Routing.SpeakerGen, Init: g.chance(10)}
	if g.chance(10) {
		a.Gen = s.Routing.SpeakerGen - 1
	}
	for range 1 + g.c.IntN(3) {
		b := state.BestPaths{Prefix: netip.MustParsePrefix(g.pick(
			"10.244.1.0/26", "10.244.2.0/26", "10.244.1.9/32", "0.0.0.0/0", "fd00:244::/122", "10.0.0.2/32"))}
		for range g.c.IntN(4) {
			p := state.LearnedPath{Neighbor: netip.MustParseAddr(g.pick("10.0.0.2", "10.0.0.3", "192.0.2.1")),
				Withdrawn: g.chance(20), Local: g.chance(10)}
			for range g.c.IntN(3) {
				p.NextHops = append(p.NextHops, netip.MustParseAddr(g.pick("10.0.0.2", "10.0.0.3", "10.0.0.1", "fe80::2", "fd00::2", "0.0.0.0", "10.1.0.2")))
			}
			b.Paths = append(b.Paths, p)
		}
		a.Prefixes = append(a.Prefixes, b)
	}
	return a
}
