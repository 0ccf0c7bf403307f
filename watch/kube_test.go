package watch

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	k8stesting "k8s.io/client-go/testing"
)

// servedGroups is a discovery client serving the given group-versions.
func servedGroups(gvs ...string) func() discovery.DiscoveryInterface {
	return func() discovery.DiscoveryInterface { return fakeDiscovery(gvs...) }
}

func failingDiscovery() discovery.DiscoveryInterface {
	d := fakeDiscovery(GroupCRD)
	d.PrependReactor("get", "group", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	return d
}

func TestResolveGroup(t *testing.T) {
	cases := []struct {
		name, flag string
		disc       func() discovery.DiscoveryInterface // nil: no discovery client
		want, err  string
	}{
		{name: "empty-is-crd", flag: "", want: GroupCRD},
		{name: "crd-by-flag", flag: GroupCRD, want: GroupCRD},
		{name: "v3-by-flag", flag: GroupV3, want: GroupV3},
		{name: "auto-v3-only", flag: GroupAuto, disc: servedGroups(GroupV3), want: GroupV3},
		{name: "auto-crd-only", flag: GroupAuto, disc: servedGroups(GroupCRD), want: GroupCRD},
		{name: "auto-both-prefers-crd", flag: GroupAuto, disc: servedGroups(GroupCRD, GroupV3), want: GroupCRD},
		{name: "auto-neither-is-crd", flag: GroupAuto, disc: servedGroups("apps/v1"), want: GroupCRD},
		{name: "auto-discovery-fails", flag: GroupAuto, disc: failingDiscovery, err: "connection refused"},
		{name: "auto-without-discovery", flag: GroupAuto, err: "needs a discovery client"},
		{name: "unknown-flag", flag: "projectcalico.org/v1", err: "unknown API group"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var d discovery.DiscoveryInterface
			if tc.disc != nil {
				d = tc.disc()
			}
			got, err := ResolveGroup(d, tc.flag)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ResolveGroup = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestNewKubeChecksConfig(t *testing.T) {
	f := newKubeFakes(nil)
	cases := []struct {
		name string
		cfg  KubeConfig
		err  string
	}{
		{name: "valid-default-group", cfg: KubeConfig{Client: fakeClient(f.client), Dynamic: f.dyn, Node: testNodeName}},
		{name: "missing-node", cfg: KubeConfig{Client: fakeClient(f.client), Dynamic: f.dyn}, err: "node name is required"},
		{name: "missing-dynamic-client", cfg: KubeConfig{Client: fakeClient(f.client)}, err: "dynamic client are required"},
		{name: "unknown-group", cfg: KubeConfig{Client: fakeClient(f.client), Dynamic: f.dyn, Node: testNodeName, Group: "v3"}, err: "unknown API group"},
		{name: "auto-unresolved", cfg: KubeConfig{Client: fakeClient(f.client), Dynamic: f.dyn, Node: testNodeName, Group: GroupAuto},
			err: "resolve it with ResolveGroup first"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewKube(tc.cfg)
			if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
		})
	}
}
