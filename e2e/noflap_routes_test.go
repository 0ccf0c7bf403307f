package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/peeragent/peeragent/internal/testrig/bird"
	"github.com/peeragent/peeragent/internal/testrig/frr"
	"github.com/peeragent/peeragent/state"
)

// node-a's own block, advertised to both peers through the whole test, and
// the pool it is in (docs/routes.md §8.1 rule 1).
const (
	noflapBlock    = "10.244.1.0/26"
	noflapAffinity = "node-a-10-244-1-0-26"
	noflapPool     = "noflap-pool"
)

// addRouteObjects gives the cluster node-a's block, its pool, a second pool
// and node-a's pods, whose addresses are all inside the block (so none is a
// borrowed address, docs/routes.md §8.1 rule 3).
func (c *noflapCluster) addRouteObjects() {
	c.pools = map[string]state.IPPool{
		noflapPool:      {Name: noflapPool, CIDR: "10.244.0.0/16"},
		"noflap-pool-2": {Name: "noflap-pool-2", CIDR: "10.245.0.0/16", DisableBGPExport: true},
	}
	c.affinities = map[string]state.BlockAffinity{
		noflapAffinity: {Name: noflapAffinity, Node: "node-a", CIDR: noflapBlock, State: "confirmed"},
	}
	c.pods = map[string]state.Pod{}
	for i := range 4 {
		p := state.Pod{Namespace: "default", Name: fmt.Sprintf("pod-%d", i), Phase: "Running", PodIPs: []string{fmt.Sprintf("10.244.1.%d", 2+i)}}
		c.pods[p.Key()] = p
	}
}

// relistRoutes is the complete list of one of the route kinds.
func (c *noflapCluster) relistRoutes(a *state.SourceSynced) {
	switch a.Kind {
	case state.KindIPPool:
		for _, p := range noflapSorted(c.pools) {
			a.Pools = append(a.Pools, noflapClonePool(p))
		}
	case state.KindBlockAffinity:
		a.Affinities = noflapSorted(c.affinities)
	case state.KindPod:
		for _, p := range noflapSorted(c.pods) {
			a.Pods = append(a.Pods, noflapClonePod(p))
		}
	}
}

// churnRoutes is a change of the route kinds that decides nothing
// (docs/routes.md §10, "Zero calls"): another node's affinity (dropped by
// the reducer as by the watch), a pod of node-a that lends out no address,
// a pool field no rule reads, or an identical relist of one of the kinds.
func (c *noflapCluster) churnRoutes(i int, r *rand.Rand) (string, state.Action) {
	switch i % 10 {
	case 7:
		node := noflapOthers[r.IntN(len(noflapOthers))]
		k := r.IntN(8)
		name := fmt.Sprintf("%s-10-244-%d-0-26", node, 10+k)
		if r.IntN(3) == 0 {
			return "other-affinities", state.BlockAffinityDeleted{Name: name}
		}
		return "other-affinities", state.BlockAffinityUpserted{Affinity: state.BlockAffinity{Name: name, Node: node,
			CIDR: fmt.Sprintf("10.244.%d.0/26", 10+k), State: []string{"confirmed", "pending", "pendingDeletion"}[r.IntN(3)]}}
	case 8:
		key := fmt.Sprintf("default/pod-%d", r.IntN(6))
		if p, ok := c.pods[key]; ok && r.IntN(3) == 0 {
			delete(c.pods, key)
			return "own-pods-no-path", state.PodDeleted{Namespace: p.Namespace, Name: p.Name}
		}
		p := state.Pod{Namespace: "default", Name: key[len("default/"):], Phase: []string{"Pending", "Running", "Succeeded"}[r.IntN(3)]}
		switch r.IntN(3) {
		case 0: // an address inside node-a's own block: not borrowed
			p.PodIPs = []string{fmt.Sprintf("10.244.1.%d", 2+r.IntN(60))}
		case 1: // host network: lends out nothing
			p.HostNetwork, p.PodIPs = true, []string{noflapOurAddr}
		}
		c.pods[key] = p
		return "own-pods-no-path", state.PodUpserted{Pod: noflapClonePod(p)}
	default:
		if i%20 == 9 {
			kinds := []state.Kind{state.KindIPPool, state.KindBlockAffinity, state.KindPod}
			a := state.SourceSynced{Kind: kinds[(i/20)%3]}
			c.relistRoutes(&a)
			return "identical-route-relists", a
		}
		name := []string{noflapPool, "noflap-pool-2"}[r.IntN(2)]
		p := noflapClonePool(c.pools[name])
		p.Disabled = !p.Disabled // read, no effect (docs/routes.md §8.6)
		c.pools[name] = p
		return "pool-disabled", state.IPPoolUpserted{Pool: noflapClonePool(p)}
	}
}

// checkRouteInputs: the loop's pools, affinities and pods are the cluster's.
func (c *noflapCluster) checkRouteInputs(t *testing.T, s state.State) {
	t.Helper()
	noflapSameInputs(t, "pools", c.pools, s.Inputs.Pools.Keys(), func(k string) (any, bool) {
		e, ok := s.Inputs.Pools.Get(k)
		return noflapSpec(ok, func() any { return *e.Spec }), ok
	})
	noflapSameInputs(t, "affinities", c.affinities, s.Inputs.Affinities.Keys(), func(k string) (any, bool) {
		e, ok := s.Inputs.Affinities.Get(k)
		return noflapSpec(ok, func() any { return *e.Spec }), ok
	})
	noflapSameInputs(t, "pods", c.pods, s.Inputs.Pods.Keys(), func(k string) (any, bool) {
		e, ok := s.Inputs.Pods.Get(k)
		return noflapSpec(ok, func() any { return *e.Spec }), ok
	})
	if n := s.Out.Advertised.Len(); n != 1 {
		t.Errorf("node-a advertises %d paths, want its block only", n)
	}
}

func noflapClonePool(p state.IPPool) state.IPPool {
	p.Unsupported = slices.Clone(p.Unsupported)
	return p
}

func noflapClonePod(p state.Pod) state.Pod {
	p.PodIPs = slices.Clone(p.PodIPs)
	return p
}

// noflapWaitBlock waits until BIRD and FRR each have node-a's block: one
// route imported, one prefix accepted.
func noflapWaitBlock(ctx context.Context, t *testing.T, b *bird.Bird, f *frr.FRR, ours netip.Addr) {
	t.Helper()
	noflapWait(ctx, t, "BIRD and FRR have node-a's block", func() bool {
		bp, err1 := b.Protocol(noflapProto)
		fn, err2 := f.Neighbor(ours)
		return err1 == nil && err2 == nil && bp.Channels["ipv4"].Imported == 1 && fn.AddressFamilies["ipv4Unicast"].AcceptedPrefixes == 1
	})
}

// noflapSameRoutes: the peers' own route counters did not move: no UPDATE
// reached FRR, and BIRD's channel took no update or withdrawal; each still
// has the block.
func noflapSameRoutes(t *testing.T, b0, b1 bird.ProtocolState, f0, f1 frr.NeighborState) {
	t.Helper()
	c0, c1 := b0.Channels["ipv4"], b1.Channels["ipv4"]
	t.Logf("BIRD ipv4: imported %d→%d, import updates %d→%d, withdraws %d→%d; FRR: updates received %d→%d, accepted prefixes %d→%d",
		c0.Imported, c1.Imported, c0.ImportUpdates.Received, c1.ImportUpdates.Received, c0.ImportWithdraws.Received, c1.ImportWithdraws.Received,
		f0.Messages.UpdatesRecv, f1.Messages.UpdatesRecv, f0.AddressFamilies["ipv4Unicast"].AcceptedPrefixes, f1.AddressFamilies["ipv4Unicast"].AcceptedPrefixes)
	if c1.Imported != 1 || c1.ImportUpdates.Received != c0.ImportUpdates.Received || c1.ImportWithdraws.Received != c0.ImportWithdraws.Received {
		t.Errorf("BIRD's routes from us moved: before %+v, after %+v", c0, c1)
	}
	if f1.Messages.UpdatesRecv != f0.Messages.UpdatesRecv || f1.AddressFamilies["ipv4Unicast"].AcceptedPrefixes != 1 {
		t.Errorf("FRR received updates from us: before %d (accepted %v), after %d (accepted %v)",
			f0.Messages.UpdatesRecv, f0.AddressFamilies, f1.Messages.UpdatesRecv, f1.AddressFamilies)
	}
}
