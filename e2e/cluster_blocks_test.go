package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/watch"
)

// TestClusterBlockAffinityAdvertised: in each API group, the real GoBGP
// executor. An IPPool and a BlockAffinity of this node created through the
// API server put the node's block in GoBGP's global RIB (docs/routes.md
// §8.1 rule 1); another node's affinity then changes nothing: not in the
// State's inputs, no speaker effect, the RIB as before; this node's
// affinity deleted takes the block out of the RIB.
func TestClusterBlockAffinityAdvertised(t *testing.T) {
	for _, tc := range []struct {
		group, crds string
		deleted     any
	}{{watch.GroupCRD, clusterCRDs, "false"}, {watch.GroupV3, clusterCRDsV3, false}} {
		t.Run(tc.group, func(t *testing.T) {
			e := clusterStart(t, 60*time.Second, nil, tc.crds)
			group := tc.group
			e.putNode(clusterNode, nil, map[string]string{watch.AnnotationIPv4: "127.0.0.1/8"})
			e.putCalico(group, "BGPConfiguration", "default", map[string]any{
				"listenPort": int64(freePort(t, clusterAddr)), "nodeToNodeMeshEnabled": false})
			a := e.startAgent(clusterAgentConfig{group: group, realBGP: true})
			a.initial("initial list", 64512)
			if got := clusterRIB(t, a); len(got) != 0 {
				t.Fatalf("RIB before any affinity: %q", got)
			}

			ours := "node-a-10-244-1-0-26"
			a.stepInputs("IPPool and this node's BlockAffinity created", func() {
				e.putCalico(group, "IPPool", "pool1", map[string]any{"cidr": "10.244.0.0/16", "ipipMode": "Never", "vxlanMode": "Never"})
				e.putCalico(group, "BlockAffinity", ours, map[string]any{"node": clusterNode, "cidr": "10.244.1.0/26",
					"state": "confirmed", "deleted": tc.deleted})
			}, func(s state.State) bool {
				_, ok := s.Inputs.Affinities.Get(ours)
				return ok && s.Inputs.Pools.Len() == 1
			})
			want := []string{"10.244.1.0/26"}
			a.waitRIB("the node's block advertised", want)

			other := "node-b-10-244-2-0-26"
			m := a.speaker.mark()
			e.putCalico(group, "BlockAffinity", other, map[string]any{"node": "node-b", "cidr": "10.244.2.0/26",
				"state": "confirmed", "deleted": tc.deleted})
			// A later change of ours on the same watch proves the other one
			// has been through it: state "" (which counts as confirmed,
			// docs/routes.md §8.1 rule 1, so no path changes).
			e.putCalico(group, "BlockAffinity", ours, map[string]any{"node": clusterNode, "cidr": "10.244.1.0/26",
				"state": "", "deleted": tc.deleted})
			a.waitState("a change of ours after the other node's affinity", func(s state.State) bool {
				e, ok := s.Inputs.Affinities.Get(ours)
				return ok && e.Spec.State == ""
			})
			a.settle()
			if _, ok := a.loop.State().Inputs.Affinities.Get(other); ok {
				t.Errorf("another node's affinity is in the State's inputs")
			}
			if n := a.actions()["blockAffinityUpserted"]; n != 2 {
				t.Errorf("%d blockAffinityUpserted actions, want 2 (ours, created and changed)", n)
			}
			if effs := a.speaker.strings(m); len(effs) != 0 {
				t.Errorf("another node's affinity caused speaker effects %q", effs)
			}
			if got := clusterRIB(t, a); !slices.Equal(got, want) {
				t.Errorf("RIB after another node's affinity: %q, want %q", got, want)
			}

			e.deleteCalico(group, "BlockAffinity", ours)
			a.waitRIB("the node's block withdrawn", nil)
		})
	}
}

// waitRIB waits until GoBGP's global IPv4 RIB holds exactly want.
func (a *clusterAgent) waitRIB(what string, want []string) {
	a.t.Helper()
	var got []string
	if !clusterPoll(a.e.ctx, clusterWaitMax, func() bool { got = clusterRIB(a.t, a); return slices.Equal(got, want) }) {
		a.alive()
		a.t.Fatalf("%s: RIB %q, want %q; problems %v; speaker effects %s", what, got, want, a.problems(),
			strings.Join(a.speaker.strings(0), "; "))
	}
}

// clusterRIB lists the prefixes of GoBGP's global IPv4 RIB, sorted.
func clusterRIB(t *testing.T, a *clusterAgent) []string {
	t.Helper()
	var out []string
	err := a.bgp.Speaker().ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_GLOBAL, Family: bgp.RF_IPv4_UC},
		func(prefix bgp.NLRI, _ []*apiutil.Path) { out = append(out, prefix.String()) })
	if err != nil {
		t.Fatalf("ListPath: %v", err)
	}
	slices.Sort(out)
	return out
}
