package watch

import (
	"fmt"
	"testing"

	"github.com/peeragent/peeragent/state"
)

const (
	dirService = `apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {type: ClusterIP, clusterIP: 10.96.0.10, ipFamilies: [IPv4], ports: [{port: 80}]}
`
	dirSlice = `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: shop, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
endpoints: [{addresses: [10.244.1.5], nodeName: node-a, conditions: {ready: true}}]
`
	dirConfig = `apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: default}
spec: {asNumber: %s}
`
)

// TestDirServicesAndSlices: a manifest directory's v1 Services and
// discovery.k8s.io/v1 EndpointSlices are read as the cluster source
// reads them (docs/routes.md §11.7), and sent again whenever the
// configurations change, since the reducer takes them only while a
// service range is configured (§8.4).
func TestDirServicesAndSlices(t *testing.T) {
	p := newPollRig(t, map[string]string{"svc.yaml": dirService + "---\n" + dirSlice,
		"config.yaml": sprintfConfig("64512")})
	first := p.poll(1)
	svcs, slices := syncedOfKind(first, state.KindService), syncedOfKind(first, state.KindEndpointSlice)
	if svcs == nil || len(svcs.Services) != 1 || svcs.Services[0].Key() != "shop/web" || svcs.Services[0].ClusterIPs[0] != "10.96.0.10" {
		t.Fatalf("services synced: %+v", svcs)
	}
	if slices == nil || len(slices.EndpointSlices) != 1 || slices.EndpointSlices[0].ServiceName != "web" ||
		len(slices.EndpointSlices[0].Endpoints) != 1 || slices.EndpointSlices[0].Endpoints[0].NodeName != "node-a" {
		t.Fatalf("endpoint slices synced: %+v", slices)
	}
	writeManifests(t, p.dir, map[string]string{"config.yaml": sprintfConfig("65000")})
	again := p.poll(3)
	if syncedOfKind(again, state.KindBGPConfiguration) == nil || syncedOfKind(again, state.KindService) == nil ||
		syncedOfKind(again, state.KindEndpointSlice) == nil {
		t.Errorf("a configuration change sent %s; want the configurations, Services and EndpointSlices", describeActions(again))
	}
	if idle := p.poll(3); len(idle) != 0 {
		t.Errorf("an unchanged directory sent %s", describeActions(idle))
	}
}

func sprintfConfig(asn string) string { return fmt.Sprintf(dirConfig, asn) }

func syncedOfKind(acts []state.Action, k state.Kind) *state.SourceSynced {
	for _, a := range acts {
		if s, ok := a.(state.SourceSynced); ok && s.Kind == k {
			return &s
		}
	}
	return nil
}
