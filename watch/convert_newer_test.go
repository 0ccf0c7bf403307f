package watch

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

// TestNewerCalicoFields feeds objects written by a Calico newer than the
// pinned API (v3.32 fields) to the manifest directory and to the cluster
// source's decoder, in both API groups: both give the same object, the
// fields this agent reads are read (keepaliveTime: a BGPPeer is no longer
// dropped whole), the ones without a BGP meaning are not reported (IPPool
// status), the others are unsupported, a problem naming the field; and an
// AS number too wide for the v3 types is a problem on the object, not a
// decode error on its file.
func TestNewerCalicoFields(t *testing.T) {
	tests := []struct {
		name, spec string
		kind       string
		codec      func(any) (any, error)
		want       func(t *testing.T, v any)
		problem    string // a problem the reducer reports, "" for none
		object     string // on which object; "" for KIND/default
	}{
		{name: "peer-keepalive-time", kind: "BGPPeer", codec: decodeWith(peerCodec().decode),
			spec: `spec: {peerIP: 192.0.2.1, asNumber: 65001, keepaliveTime: 10s}`,
			want: func(t *testing.T, v any) {
				p := v.(state.BGPPeer)
				if p.KeepaliveTime == nil || p.KeepaliveTime.Duration != 10*time.Second || len(p.Unsupported) != 0 {
					t.Errorf("keepaliveTime %v, unsupported %v; want 10s and none", p.KeepaliveTime, p.Unsupported)
				}
			}},
		{name: "pool-status", kind: "IPPool", codec: decodeWith(poolCodec().decode),
			spec: "spec: {cidr: 10.244.0.0/16}\nstatus: {conditions: [{type: Allocatable, status: \"True\", reason: OK, message: ok, lastTransitionTime: \"2026-01-01T00:00:00Z\"}]}",
			want: func(t *testing.T, v any) {
				if u := v.(state.IPPool).Unsupported; len(u) != 0 {
					t.Errorf("unsupported %v, want none", u)
				}
			}},
		{name: "config-program-cluster-routes", kind: "BGPConfiguration", codec: decodeWith(configCodec().decode),
			spec:    `spec: {asNumber: 65000, programClusterRoutes: Disabled, ipv4NormalRoutePriority: 1024}`,
			want:    wantUnsupported("spec.ipv4NormalRoutePriority", "spec.programClusterRoutes"),
			problem: "unsupported field spec.ipv4NormalRoutePriority, spec.programClusterRoutes"},
		{name: "filter-newer-rule-fields", kind: "BGPFilter", codec: decodeWith(filterCodec().decode),
			spec: `spec: {exportV4: [{action: Accept, cidr: 10.0.0.0/8, matchOperator: In, communities: {values: ["65000:1"]},
  asPathPrefix: [65001], priority: 512, operations: [{addCommunity: {value: "65000:2"}}, {prependASPath: {prefix: [65000]}}]}]}`,
			want: wantUnsupported("spec.exportV4[0].asPathPrefix", "spec.exportV4[0].communities",
				"spec.exportV4[0].operations", "spec.exportV4[0].priority"),
			problem: "filter default is invalid: unsupported field spec.exportV4[0].asPathPrefix", object: "bgppeer/p"},
		{name: "peer-as-number-too-wide", kind: "BGPPeer", codec: decodeWith(peerCodec().decode),
			spec: `spec: {peerIP: 192.0.2.1, asNumber: 5000000000, localASNumber: -1, keepaliveTime: 5s}`,
			want: func(t *testing.T, v any) {
				p := v.(state.BGPPeer)
				if p.ASNumber != 5000000000 || p.LocalASNumber != -1 || p.PeerIP != "192.0.2.1" || p.KeepaliveTime == nil {
					t.Errorf("got %+v", p)
				}
			},
			problem: "asNumber 5000000000 out of range 1-4294967295"},
		{name: "config-as-number-too-wide", kind: "BGPConfiguration", codec: decodeWith(configCodec().decode),
			spec: `spec: {asNumber: 4294967296, listenPort: 1790}`,
			want: func(t *testing.T, v any) {
				if c := v.(state.BGPConfiguration); c.ASNumber != 4294967296 || c.ListenPort != 1790 {
					t.Errorf("got %+v", c)
				}
			},
			problem: "asNumber 4294967296 out of range 1-4294967295"},
	}
	for _, tt := range tests {
		for _, group := range []string{manifestCRDVersion, manifestV3Version} {
			t.Run(tt.name+"/"+strings.Split(group, "/")[0], func(t *testing.T) {
				doc := "apiVersion: " + group + "\nkind: " + tt.kind + "\nmetadata: {name: default}\n" + tt.spec + "\n"
				_, fromCluster := decodeBoth(t, doc, tt.codec)
				tt.want(t, fromCluster)
				probs := problemsOf(fromCluster)
				obj, found := tt.object, false
				if obj == "" {
					obj = strings.ToLower(tt.kind) + "/default"
				}
				for _, p := range probs {
					found = found || (tt.problem != "" && strings.Contains(p.Reason, tt.problem) && p.Object == obj)
				}
				if (tt.problem == "") != (len(probs) == 0) || (tt.problem != "" && !found) {
					t.Errorf("problems %v, want one on the object with %q", probs, tt.problem)
				}
			})
		}
	}
}

func wantUnsupported(fields ...string) func(*testing.T, any) {
	return func(t *testing.T, v any) {
		if got := unsupportedOf(v); !cmp.Equal(got, fields) {
			t.Errorf("unsupported = %v, want %v", got, fields)
		}
	}
}

// TestKeepaliveTimeReachesTheNeighbor: a BGPPeer with keepaliveTime gives
// its neighbor (the ToR session comes up), with that keepalive interval.
func TestKeepaliveTimeReachesTheNeighbor(t *testing.T) {
	objs, fps := decodeManifest([]byte(`apiVersion: crd.projectcalico.org/v1
kind: BGPPeer
metadata: {name: tor}
spec: {peerIP: 192.0.2.1, asNumber: 65001, keepaliveTime: 3s}
`))
	if len(fps) != 0 || len(objs) != 1 {
		t.Fatalf("%d objects, problems %v", len(objs), fps)
	}
	s := state.New("node-a", state.Options{})
	s = reducer.Reduce(s, state.NodeUpserted{Node: state.Node{Name: "node-a", IPv4Address: "10.0.0.1/24"}})
	s = reducer.Reduce(s, state.PeerUpserted{Peer: objs[0].value.(state.BGPPeer)})
	n, ok := s.Out.Neighbors.Get(state.AddrKey(netip.MustParseAddr("192.0.2.1")))
	if !ok || !n.Active() || n.KeepaliveSeconds != 3 {
		t.Fatalf("neighbor %+v (found %v), want active with keepaliveSeconds 3; problems %v", n, ok, s.AllProblems())
	}
}
