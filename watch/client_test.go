package watch

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// TestTypedClientRequests: TypedClient makes the requests client-go's
// generated typed clients make (paths, protobuf preferred for reads,
// Events in the event's namespace) and decodes the answers.
func TestTypedClientRequests(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.RequestURI()+" accept="+r.Header.Get("Accept"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		var body any
		switch {
		case r.URL.Query().Get("watch") == "true":
			return // an empty watch stream: the watch ends at once
		case r.URL.Path == "/apis":
			body = metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
				Groups: []metav1.APIGroup{{Name: "projectcalico.org"}, {Name: "discovery.k8s.io"}}}
		case r.URL.Path == "/api/v1/nodes":
			body = corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"},
				Items: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}}}
		case strings.HasSuffix(r.URL.Path, "/events"):
			var ev corev1.Event
			_ = json.NewDecoder(r.Body).Decode(&ev)
			ev.Kind, ev.APIVersion = "Event", "v1"
			body = ev
		default:
			body = map[string]any{"kind": "List", "apiVersion": "v1", "items": []any{}}
		}
		_ = json.NewEncoder(w).Encode(body)
	}))
	defer srv.Close()
	c, err := NewTypedClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	nodes, err := c.Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 1 || nodes.Items[0].Name != "node-a" {
		t.Fatalf("nodes: %+v, %v", nodes, err)
	}
	if _, err := c.Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Secrets("ns").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Services("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EndpointSlices("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := c.Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: "7", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	w, err = c.EndpointSlices("ns").Watch(ctx, metav1.ListOptions{LabelSelector: "a=b"})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	groups, err := ResolveGroup(c, GroupAuto)
	if err != nil || groups != GroupV3 {
		t.Fatalf("ResolveGroup = %q, %v; want %s", groups, err, GroupV3)
	}
	ev, err := c.Events().Create(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "shop"}, Reason: "Problem"})
	if err != nil || ev.Reason != "Problem" {
		t.Fatalf("event: %+v, %v", ev, err)
	}
	proto := " accept=application/vnd.kubernetes.protobuf,application/json"
	want := []string{
		"GET /api/v1/nodes" + proto,
		"GET /api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a" + proto,
		"GET /api/v1/namespaces/ns/secrets" + proto,
		"GET /api/v1/services" + proto,
		"GET /apis/discovery.k8s.io/v1/endpointslices" + proto,
		"GET /api/v1/nodes?allowWatchBookmarks=true&resourceVersion=7&watch=true" + proto,
		"GET /apis/discovery.k8s.io/v1/namespaces/ns/endpointslices?labelSelector=a%3Db&watch=true" + proto,
		"GET /apis accept=application/json",
		"POST /api/v1/namespaces/shop/events accept=application/json, */*",
	}
	mu.Lock()
	if !slices.Equal(got, want) {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got = nil
	mu.Unlock()

	// The same reads and the Event through client-go's full clientset.
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	_, _ = cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"})
	_, _ = cs.CoreV1().Secrets("ns").List(ctx, metav1.ListOptions{})
	_, _ = cs.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	_, _ = cs.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
	if w, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: "7", AllowWatchBookmarks: true}); err == nil {
		w.Stop()
	}
	if w, err := cs.DiscoveryV1().EndpointSlices("ns").Watch(ctx, metav1.ListOptions{LabelSelector: "a=b"}); err == nil {
		w.Stop()
	}
	sink := &typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")}
	_, _ = sink.Create(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "shop"}, Reason: "Problem"})
	mu.Lock()
	defer mu.Unlock()
	if full := slices.Delete(slices.Clone(want), 7, 8); !slices.Equal(got, full) {
		t.Errorf("the full clientset's requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(full, "\n"))
	}
}
