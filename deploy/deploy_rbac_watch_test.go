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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/peeragent/peeragent/internal/testrig/typedclient"
	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/watch"
	"github.com/peeragent/peeragent/watch/status"
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
// exactly what the watchers use). The status reporter (watch/status) runs
// too: its writes are the only ones granted.
func TestRBACCoversWatchers(t *testing.T) {
	ms := loadManifests(t)
	used := map[string]bool{} // "group/resource"
	for _, group := range []string{watch.GroupCRD, watch.GroupV3} {
		t.Run(group, func(t *testing.T) {
			for _, a := range append(watcherRequests(t, group), reporterRequests(t, group)...) {
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
	k, err := watch.NewKube(watch.KubeConfig{Client: typedclient.Of(client), Dynamic: dyn, Group: group,
		Namespace: secretsNamespace, Node: "node-a", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	k.Watch(exampleSecret)
	k.WatchServices() // docs/routes.md §8.4: while a service range is configured
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
	want := len(calicoListKinds) + 5 // nodes, pods, secrets, services, endpointslices
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
		if n >= len(state.SyncedKinds)+2 && watches >= want {
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

// reporterRequests runs a status Reporter of group, over fakes holding a
// CalicoNodeStatus of its node, with a State whose problems name a BGPPeer
// and a Secret, until it wrote the status and both Events.
func reporterRequests(t *testing.T, group string) []access {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: strings.Split(group, "/")[0], Version: strings.Split(group, "/")[1], Resource: "caliconodestatuses"}
	cns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group, "kind": "CalicoNodeStatus",
		"metadata": map[string]any{"name": "node-a"}, "spec": map[string]any{"node": "node-a", "classes": []any{"BGP"}}}}
	client := fake.NewClientset()
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "CalicoNodeStatusList"}, cns)
	r, err := status.New(status.Config{Dynamic: dyn, Group: group, Node: "node-a", Log: slog.New(slog.DiscardHandler),
		Events: &typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")}})
	if err != nil {
		t.Fatal(err)
	}
	s := state.New("node-a", state.Options{})
	for _, k := range state.SyncedKinds {
		s.Synced[k] = true
	}
	s.Out.Problems = s.Out.Problems.Set("peer/tor", []state.Problem{{Object: "bgppeer/tor", Reason: "waiting"}}).
		Set("secret", []state.Problem{{Object: "secret/" + secretsNamespace + "/tor-md5", Reason: "forbidden"}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	r.Observe(s)
	deadline := time.Now().Add(10 * time.Second)
	for {
		reqs := requests(client.Actions(), dyn.Actions())
		events, updates := 0, 0
		for _, a := range reqs {
			switch {
			case a.resource == "events" && a.verb == "create":
				events++
			case strings.HasPrefix(a.resource, "caliconodestatuses") && a.verb == "update":
				updates++
			}
		}
		if events >= 2 && updates >= 1 {
			return reqs
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %+v", reqs)
		}
		time.Sleep(5 * time.Millisecond) // polling a fake's action log, bounded by the deadline
	}
}

// requestName is the object name an action is authorized for: a get's
// name, or a list's or watch's field selector metadata.name=NAME (the API
// server's request info takes the name from it, so resourceNames apply).
func requestName(a k8stesting.Action) string {
	var f fields.Selector
	switch a := a.(type) {
	case k8stesting.GetAction:
		return a.GetName()
	case k8stesting.ListAction:
		f = a.GetListRestrictions().Fields
	case k8stesting.WatchAction:
		f = a.GetWatchRestrictions().Fields
	}
	if f == nil {
		return ""
	}
	name, _ := f.RequiresExactMatch("metadata.name")
	return name
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
			seen[access{a.GetVerb(), r.Group, res, a.GetNamespace(), requestName(a)}] = true
		}
	}
	out := slices.Collect(maps.Keys(seen))
	slices.SortFunc(out, func(a, b access) int {
		return strings.Compare(a.group+a.resource+a.verb+a.namespace, b.group+b.resource+b.verb+b.namespace)
	})
	return out
}
