package e2e

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/state"
)

// noflapCluster is the test's API server: the objects as they stand. Every
// action carries fresh copies (a dispatched action belongs to the reducer).
type noflapCluster struct {
	mu      sync.Mutex
	nodes   map[string]state.Node
	peers   map[string]state.BGPPeer
	configs map[string]state.BGPConfiguration
	filters map[string]state.BGPFilter
	secrets map[string]state.Secret
	// pools, node-a's affinities and node-a's pods (noflap_routes_test.go).
	pools      map[string]state.IPPool
	affinities map[string]state.BlockAffinity
	pods       map[string]state.Pod
}

func newNoflapCluster(listenPort int, bird, frr netip.AddrPort) *noflapCluster {
	meshOff := false
	c := &noflapCluster{
		nodes: map[string]state.Node{"node-a": {Name: "node-a", IPv4Address: noflapOurAddr + "/8",
			Labels: map[string]string{"noflap-role": "speaker", "rack": "r1"}}},
		peers: map[string]state.BGPPeer{
			// One peer by node name, one by a selector only node-a matches.
			"noflap-bird": {Name: "noflap-bird", Node: "node-a", PeerIP: bird.String(), ASNumber: noflapBirdAS,
				Password: &state.SecretKeyRef{Name: noflapBirdSec, Key: noflapKey}},
			"noflap-frr": {Name: "noflap-frr", NodeSelector: noflapSelector, PeerIP: frr.String(), ASNumber: noflapFRRAS,
				Password: &state.SecretKeyRef{Name: noflapFRRSec, Key: noflapKey}},
		},
		configs: map[string]state.BGPConfiguration{
			"default":     {Name: "default", NodeToNodeMeshEnabled: &meshOff},
			"node.node-a": {Name: "node.node-a", ListenPort: int32(listenPort)},
		},
		filters: map[string]state.BGPFilter{},
		secrets: map[string]state.Secret{},
	}
	for i, n := range noflapOthers {
		c.nodes[n] = state.Node{Name: n, IPv4Address: fmt.Sprintf("127.0.0.%d/8", 52+i),
			Labels: map[string]string{"noflap-role": "worker", "rack": "r2"}}
		c.configs["node."+n] = state.BGPConfiguration{Name: "node." + n, LogSeverityScreen: "Info"}
	}
	c.addRouteObjects()
	c.setSecret(noflapBirdSec, noflapBirdPw)
	c.setSecret(noflapFRRSec, noflapFRRPw1)
	return c
}

// setSecret stores a Secret and returns the copy its watch would deliver.
func (c *noflapCluster) setSecret(name, password string) state.Secret {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.secrets[name] = state.Secret{Name: name, Data: map[string]state.Password{noflapKey: state.NewPassword(password)}}
	return noflapCloneSecret(c.secrets[name])
}

func (c *noflapCluster) secret(name string) (state.Secret, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.secrets[name]
	return noflapCloneSecret(s), ok
}

// lists are the complete lists of the four synced kinds, as a (re)list
// delivers them.
func (c *noflapCluster) lists() []state.Action {
	c.mu.Lock()
	defer c.mu.Unlock()
	return []state.Action{c.relist(state.KindNode), c.relist(state.KindBGPConfiguration),
		c.relist(state.KindBGPFilter), c.relist(state.KindBGPPeer),
		c.relist(state.KindIPPool), c.relist(state.KindBlockAffinity), c.relist(state.KindPod)}
}

// relist is one kind's complete list, identical to what the loop has.
func (c *noflapCluster) relist(k state.Kind) state.SourceSynced {
	a := state.SourceSynced{Kind: k}
	switch k {
	case state.KindNode:
		for _, n := range noflapSorted(c.nodes) {
			a.Nodes = append(a.Nodes, noflapCloneNode(n))
		}
	case state.KindBGPPeer:
		for _, p := range noflapSorted(c.peers) {
			a.Peers = append(a.Peers, noflapClonePeer(p))
		}
	case state.KindBGPConfiguration:
		for _, cfg := range noflapSorted(c.configs) {
			a.Configs = append(a.Configs, noflapCloneConfig(cfg))
		}
	case state.KindBGPFilter:
		for _, f := range noflapSorted(c.filters) {
			a.Filters = append(a.Filters, noflapCloneFilter(f))
		}
	default:
		c.relistRoutes(&a)
	}
	return a
}

// churn makes change i (of noflapChanges) in the cluster and returns its
// kind and the action a watch would deliver for it. None concerns node-a's
// two neighbors. The last one is the marker: a label of the last other node.
func (c *noflapCluster) churn(i int, r *rand.Rand) (string, state.Action) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i == noflapChanges-1 {
		n := noflapCloneNode(c.nodes[noflapOthers[len(noflapOthers)-1]])
		n.Labels["noflap-marker"] = "done"
		c.nodes[n.Name] = n
		return "node-labels", state.NodeUpserted{Node: noflapCloneNode(n)}
	}
	if i%10 >= 7 {
		return c.churnRoutes(i, r)
	}
	switch i % 7 {
	case 0: // labels of another node, never the one the FRR peer selects
		n := noflapCloneNode(c.nodes[noflapOthers[r.IntN(len(noflapOthers))]])
		n.Labels["noflap-churn"] = strconv.Itoa(i)
		n.Labels["noflap-role"] = []string{"worker", "edge", "ingress"}[r.IntN(3)]
		if r.IntN(2) == 0 {
			n.Labels["rack"] = []string{"r1", "r2", "r3"}[r.IntN(3)]
		}
		c.nodes[n.Name] = n
		return "node-labels", state.NodeUpserted{Node: noflapCloneNode(n)}
	case 1: // Secrets nobody uses: created, rotated, deleted (delivered as a relist would)
		name := fmt.Sprintf("noflap-unused-%d", r.IntN(4))
		if _, ok := c.secrets[name]; ok && r.IntN(3) == 0 {
			delete(c.secrets, name)
			return "unused-secrets", state.SecretDeleted{Name: name}
		}
		c.secrets[name] = state.Secret{Name: name, Data: map[string]state.Password{noflapKey: state.NewPassword(fmt.Sprintf("unused-%d", i))}}
		return "unused-secrets", state.SecretUpserted{Secret: noflapCloneSecret(c.secrets[name])}
	case 2: // identical relists: each synced kind, and the used Secrets again
		switch (i / 7) % 6 {
		case 0:
			return "identical-relists", c.relist(state.KindNode)
		case 1:
			return "identical-relists", c.relist(state.KindBGPPeer)
		case 2:
			return "identical-relists", c.relist(state.KindBGPConfiguration)
		case 3:
			return "identical-relists", c.relist(state.KindBGPFilter)
		case 4:
			return "identical-relists", state.SecretUpserted{Secret: noflapCloneSecret(c.secrets[noflapBirdSec])}
		default:
			return "identical-relists", state.SecretUpserted{Secret: noflapCloneSecret(c.secrets[noflapFRRSec])}
		}
	case 3: // other peers added and removed: for node-c, or by a selector node-a does not match
		k := r.IntN(4)
		name := fmt.Sprintf("noflap-other-%d", k)
		if _, ok := c.peers[name]; ok {
			delete(c.peers, name)
			return "other-peers", state.PeerDeleted{Name: name}
		}
		p := state.BGPPeer{Name: name, Node: "node-c", PeerIP: fmt.Sprintf("127.0.0.%d", 90+k), ASNumber: int64(65100 + k)}
		if k%2 == 1 {
			p.Node, p.NodeSelector = "", "noflap-role == 'edge'"
		}
		c.peers[name] = p
		return "other-peers", state.PeerUpserted{Peer: noflapClonePeer(p)}
	case 4: // status-only updates: the node unchanged, node-a included
		names := append([]string{"node-a"}, noflapOthers...)
		return "status-only", state.NodeUpserted{Node: noflapCloneNode(c.nodes[names[r.IntN(len(names))]])}
	case 5: // BGPFilters nobody uses
		name := fmt.Sprintf("noflap-filter-%d", r.IntN(3))
		if _, ok := c.filters[name]; ok && r.IntN(3) == 0 {
			delete(c.filters, name)
			return "unused-filters", state.FilterDeleted{Name: name}
		}
		f := state.BGPFilter{Name: name, ImportV4: []state.FilterRule{{CIDR: fmt.Sprintf("10.%d.0.0/16", i%250),
			MatchOperator: "In", Action: []string{"Accept", "Reject"}[r.IntN(2)]}}}
		c.filters[name] = f
		return "unused-filters", state.FilterUpserted{Filter: noflapCloneFilter(f)}
	default: // another node's log level
		levels := []string{"Info", "Debug", "Warning", "Error"}
		cfg := noflapCloneConfig(c.configs["node."+noflapOthers[r.IntN(len(noflapOthers))]])
		cfg.LogSeverityScreen = levels[(slices.Index(levels, cfg.LogSeverityScreen)+1)%len(levels)]
		c.configs[cfg.Name] = cfg
		return "other-node-log-level", state.ConfigUpserted{Config: noflapCloneConfig(cfg)}
	}
}

// checkInputs: the loop's inputs are the cluster's objects, all valid, and
// nothing is a problem, so every change was a real change (or a real
// identical relist) that the reducer took, not input it set aside.
func (c *noflapCluster) checkInputs(t *testing.T, s state.State) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	noflapSameInputs(t, "nodes", c.nodes, s.Inputs.Nodes.Keys(), func(k string) (any, bool) {
		e, ok := s.Inputs.Nodes.Get(k)
		return noflapSpec(ok, func() any { return *e.Spec }), ok
	})
	noflapSameInputs(t, "peers", c.peers, s.Inputs.Peers.Keys(), func(k string) (any, bool) {
		e, ok := s.Inputs.Peers.Get(k)
		if ok && !e.Valid {
			t.Errorf("peer %s is invalid", k)
		}
		return noflapSpec(ok, func() any { return *e.Spec }), ok
	})
	noflapSameInputs(t, "configs", c.configs, s.Inputs.Configs.Keys(), func(k string) (any, bool) {
		e, ok := s.Inputs.Configs.Get(k)
		return noflapSpec(ok, func() any { return *e }), ok
	})
	noflapSameInputs(t, "filters", c.filters, s.Inputs.Filters.Keys(), func(k string) (any, bool) {
		e, ok := s.Inputs.Filters.Get(k)
		if ok && e.Invalid != "" {
			t.Errorf("filter %s is invalid: %s", k, e.Invalid)
		}
		return noflapSpec(ok, func() any { return *e.Spec }), ok
	})
	noflapSameInputs(t, "secrets", c.secrets, s.Inputs.Secrets.Keys(), func(k string) (any, bool) {
		e, ok := s.Inputs.Secrets.Get(k)
		return noflapSpec(ok, func() any { return *e }), ok
	})
	c.checkRouteInputs(t, s)
	if probs := s.AllProblems(); len(probs) != 0 {
		t.Errorf("the State has problems: %v", probs)
	}
}

func noflapSpec(ok bool, spec func() any) any {
	if !ok {
		return nil
	}
	return spec()
}

func noflapSameInputs[V any](t *testing.T, what string, want map[string]V, have []string, get func(string) (any, bool)) {
	t.Helper()
	if keys := slices.Sorted(maps.Keys(want)); !slices.Equal(keys, slices.Sorted(slices.Values(have))) {
		t.Errorf("the loop's %s are %v, the cluster's %v", what, have, keys)
		return
	}
	for k, v := range want {
		if got, _ := get(k); !reflect.DeepEqual(got, any(v)) {
			t.Errorf("the loop's %s %s is %+v, the cluster's %+v", what, k, got, v)
		}
	}
}

// noflapSteps is how many batches the loop has reduced and diffed.
func noflapSteps(t *testing.T, l *agent.Loop) uint64 {
	t.Helper()
	mfs, err := l.Metrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "peeragent_diff_seconds" && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatal("no peeragent_diff_seconds in the loop's metrics")
	return 0
}

func noflapSorted[V any](m map[string]V) []V {
	keys := slices.Sorted(maps.Keys(m))
	out := make([]V, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

func noflapCloneNode(n state.Node) state.Node {
	n.Labels = maps.Clone(n.Labels)
	return n
}

func noflapClonePeer(p state.BGPPeer) state.BGPPeer {
	p.Password, p.MaxRestartTime = noflapClonePtr(p.Password), noflapClonePtr(p.MaxRestartTime)
	p.Filters = slices.Clone(p.Filters)
	return p
}

func noflapCloneConfig(c state.BGPConfiguration) state.BGPConfiguration {
	c.NodeToNodeMeshEnabled = noflapClonePtr(c.NodeToNodeMeshEnabled)
	c.NodeMeshPassword = noflapClonePtr(c.NodeMeshPassword)
	c.NodeMeshMaxRestartTime = noflapClonePtr(c.NodeMeshMaxRestartTime)
	return c
}

// noflapClonePtr is a pointer to a copy of *p, nil for nil.
func noflapClonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func noflapCloneFilter(f state.BGPFilter) state.BGPFilter {
	f.ExportV4, f.ImportV4 = slices.Clone(f.ExportV4), slices.Clone(f.ImportV4)
	f.ExportV6, f.ImportV6 = slices.Clone(f.ExportV6), slices.Clone(f.ImportV6)
	return f
}

func noflapCloneSecret(s state.Secret) state.Secret {
	s.Data = maps.Clone(s.Data)
	return s
}

func noflapMix(mix map[string]int) string {
	keys := make([]string, 0, len(mix))
	for k := range mix {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, mix[k])
	}
	return strings.Join(parts, ", ")
}
