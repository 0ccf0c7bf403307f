package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// TestPlanFromDirShowsServiceRoutes: `plan --from` a directory holding a
// Service and its EndpointSlice beside a BGPConfiguration that advertises
// service addresses shows the service's host routes (docs/routes.md §8.4),
// as the cluster source would (the directory used to ignore both kinds
// without a word). A Local service's /32s need a ready endpoint on this
// node: node-b's endpoint alone gives none.
func TestPlanFromDirShowsServiceRoutes(t *testing.T) {
	const manifest = `apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: default}
spec:
  asNumber: 64512
  serviceClusterIPs: [{cidr: 10.96.0.0/12}]
  serviceLoadBalancerIPs: [{cidr: 198.51.100.0/24}]
---
apiVersion: v1
kind: Node
metadata:
  name: node-a
  annotations: {projectcalico.org/IPv4Address: 10.0.0.1/24}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  type: LoadBalancer
  clusterIP: 10.96.0.10
  clusterIPs: [10.96.0.10]
  ipFamilies: [IPv4]
  externalTrafficPolicy: Local
  ports: [{port: 80}]
status:
  loadBalancer: {ingress: [{ip: 198.51.100.5}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-abc
  namespace: shop
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
endpoints:
- addresses: [10.244.1.5]
  nodeName: %s
  conditions: {ready: true}
`
	for _, tc := range []struct {
		endpointNode string
		want         []string
	}{
		{"node-a", []string{"10.96.0.0/12", "10.96.0.10/32", "198.51.100.0/24", "198.51.100.5/32"}},
		{"node-b", []string{"10.96.0.0/12", "198.51.100.0/24"}},
	} {
		t.Run("endpoint-on-"+tc.endpointNode, func(t *testing.T) {
			dir := t.TempDir()
			doc := []byte(fmt.Sprintf(manifest, tc.endpointNode))
			if err := os.WriteFile(filepath.Join(dir, "all.yaml"), doc, 0o644); err != nil {
				t.Fatal(err)
			}
			p := MakePlan(dir, "node-a", state.Options{})
			var got []string
			for _, a := range p.Advertised {
				got = append(got, a.Prefix)
			}
			if !slices.Equal(got, tc.want) || len(p.Problems) != 0 {
				t.Errorf("advertised %v, want %v; problems %v", got, tc.want, p.Problems)
			}
		})
	}
}
