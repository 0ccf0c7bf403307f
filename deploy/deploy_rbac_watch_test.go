package deploy

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/watch"
)

// The Calico list kinds the fake dynamic client serves, in both groups.
var calicoListKinds = map[string]string{
	"bgppeers": "BGPPeerList", "bgpconfigurations": "BGPConfigurationList", "bgpfilters": "BGPFilterList",
	"blockaffinities": "BlockAffinityList", "ippools": "IPPoolList",
}

// TestRBACCoversWatchers runs the Kubernetes source of the watch package
// over fake clients, in each API group, with a Secret watched, and records
// every API request it makes: each must be allowed by rbac.yaml, and every
// resource rbac.yaml grants must be read by some request (the grants are
// exactly what the watchers use).
func TestRBACCoversWatchers(t *testing.T) {
	ms := loadManifests(t)
	used := map[string]bool{} // "group/resource"
	for _, group := range []string{watch.GroupCRD, watch.GroupV3} {
		t.Run(group, func(t *testing.T) {
			for _, a := range watcherRequests(t, group) {
				used[a.group+"/"+a.resource] = true
				if !allowed(ms, a) {
					t.Errorf("the watchers make %+v, which rbac.yaml does not allow", a)
				}
			}
		})
	}
	granted := map[string]bool{}
	for _, r := range all[*rbacv1.ClusterRole](ms) {
		for _, rule := range r.Rules {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					granted[g+"/"+res] = true
				}
			}
		}
	}
	for _, r := range all[*rbacv1.Role](ms) {
		for _, rule := range r.Rules {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					granted[g+"/"+res] = true
				}
			}
		}
	}
	for _, gr := range slices.Sorted(maps.Keys(granted)) {
		if !used[gr] {
			t.Errorf("rbac.yaml grants %s, which no watcher reads", gr)
		}
	}
}

// watcherRequests runs a Kube reading group until it has listed and watched
// every kind and the Secret, and returns the requests, deduplicated.
func watcherRequests(t *testing.T, group string) []access {
	t.Helper()
	kinds := map[schema.GroupVersionResource]string{}
	for _, g := range []string{watch.GroupCRD, watch.GroupV3} {
		gv, _ := schema.ParseGroupVersion(g)
		for res, list := range calicoListKinds {
			kinds[gv.WithResource(res)] = list
		}
	}
	client := fake.NewClientset()
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds)
	k, err := watch.NewKube(watch.KubeConfig{Client: client, Dynamic: dyn, Group: group,
		Namespace: secretsNamespace, Node: "node-a", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	k.Watch("tor-md5")
	var mu sync.Mutex
	synced := map[state.Kind]bool{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- k.Run(ctx, func(a state.Action) {
			if s, ok := a.(state.SourceSynced); ok {
				mu.Lock()
				synced[s.Kind] = true
				mu.Unlock()
			}
		})
	}()
	// Every kind listed (the secret too), and a watch of each opened.
	want := len(calicoListKinds) + 3 // nodes, pods, secrets
	deadline := time.Now().Add(10 * time.Second)
	var reqs []access
	for {
		reqs = requests(client.Actions(), dyn.Actions())
		watches := 0
		for _, a := range reqs {
			if a.verb == "watch" {
				watches++
			}
		}
		mu.Lock()
		n := len(synced)
		mu.Unlock()
		if n >= len(state.SyncedKinds) && watches >= want {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("timed out: synced %d kinds, %d watches in %+v", n, watches, reqs)
		}
		time.Sleep(5 * time.Millisecond) // polling a fake's action log, bounded by the deadline
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return reqs
}

// requests turns the fakes' recorded actions into RBAC requests.
func requests(lists ...[]k8stesting.Action) []access {
	seen := map[access]bool{}
	for _, l := range lists {
		for _, a := range l {
			r := a.GetResource()
			res := r.Resource
			if a.GetSubresource() != "" {
				res += "/" + a.GetSubresource()
			}
			seen[access{a.GetVerb(), r.Group, res, a.GetNamespace()}] = true
		}
	}
	out := slices.Collect(maps.Keys(seen))
	slices.SortFunc(out, func(a, b access) int {
		return strings.Compare(a.group+a.resource+a.verb+a.namespace, b.group+b.resource+b.verb+b.namespace)
	})
	return out
}
