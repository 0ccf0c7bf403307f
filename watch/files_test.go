package watch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/peeragent/peeragent/state"
)

// fileCmp compares state values, passwords by their text.
var fileCmp = cmp.Options{
	cmp.Comparer(func(a, b state.Password) bool { return a.Reveal() == b.Reveal() }),
	cmpopts.EquateEmpty(),
}

// writeManifests creates files (name → content) in dir.
func writeManifests(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func manifestPeer(version, name, as string) string {
	return "apiVersion: " + version + "\nkind: BGPPeer\nmetadata:\n  name: " + name +
		"\nspec:\n  peerIP: 192.0.2.1\n  asNumber: " + as + "\n"
}

func filePeer(name string, as int64) state.BGPPeer {
	return state.BGPPeer{Name: name, PeerIP: "192.0.2.1", ASNumber: as}
}

const manifestFullPeer = `# a ToR
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata:
  name: tor-a
spec:
  nodeSelector: rack == 'a'
  peerIP: 192.0.2.1:1790
  asNumber: 65001
  localASNumber: 64999
  password:
    secretKeyRef: {name: bgp-secrets, key: tor-a, optional: true}
  sourceAddress: None
  maxRestartTime: 90s
  numAllowedLocalASNumbers: 2
  ttlSecurity: 1
  nextHopMode: Self
  reversePeering: Manual
  filters: [f1, f2]
  reachableBy: 10.0.0.254
`

const manifestConfigs = `apiVersion: crd.projectcalico.org/v1
kind: BGPConfiguration
metadata: {name: default}
spec:
  asNumber: 64513
  nodeToNodeMeshEnabled: false
  listenPort: 1790
  nodeMeshPassword: {secretKeyRef: {name: mesh, key: pw}}
  nodeMeshMaxRestartTime: 2m
  logSeverityScreen: Debug
---
apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: node.node-a}
spec: {listenPort: 1791}
`

const manifestFilter = `apiVersion: projectcalico.org/v3
kind: BGPFilter
metadata: {name: f1}
spec:
  exportV4:
  - {action: Accept, matchOperator: In, cidr: 10.0.0.0/8, prefixLength: {min: 16, max: 24}}
  - {action: Reject, source: RemotePeers}
  importV6:
  - {action: Reject, interface: "eth*"}
`

const manifestNode = `apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: {rack: a, zone: 1}
  annotations:
    projectcalico.org/IPv4Address: 10.0.0.1/24
    projectcalico.org/IPv6Address: fd00::1/64
    projectcalico.org/ASNumber: 64600
    projectcalico.org/RouteReflectorClusterID: 224.0.0.1
    unrelated: x
status: {addresses: [{type: InternalIP, address: 10.0.0.1}]}
`

const manifestSecrets = `apiVersion: v1
kind: Secret
metadata: {name: bgp-secrets, namespace: calico-vpp-dataplane}
data: {tor-a: aHVudGVyMg==}
stringData: {tor-b: s3cret}
---
apiVersion: v1
kind: Secret
metadata: {name: mesh}
stringData: {pw: "1234"}
`

func TestLoadDirKinds(t *testing.T) {
	ms := func(d time.Duration) *state.Duration { return &state.Duration{Duration: d} }
	off := false
	tests := []struct {
		name  string
		files map[string]string
		want  Objects
	}{
		{name: "bgppeer-every-field", files: map[string]string{"p.yaml": manifestFullPeer},
			want: Objects{Peers: []state.BGPPeer{{Name: "tor-a", NodeSelector: "rack == 'a'",
				PeerIP: "192.0.2.1:1790", ASNumber: 65001, LocalASNumber: 64999,
				Password:      &state.SecretKeyRef{Name: "bgp-secrets", Key: "tor-a", Optional: true},
				SourceAddress: "None", MaxRestartTime: ms(90 * time.Second), NumAllowedLocalASNumbers: 2,
				TTLSecurity: 1, NextHopMode: "Self", ReversePeering: "Manual", Filters: []string{"f1", "f2"},
				ReachableBy: "10.0.0.254"}}}},
		{name: "bgpconfiguration-both-groups", files: map[string]string{"c.yaml": manifestConfigs},
			want: Objects{Configs: []state.BGPConfiguration{
				{Name: "default", ASNumber: 64513, NodeToNodeMeshEnabled: &off, ListenPort: 1790,
					NodeMeshPassword:       &state.SecretKeyRef{Name: "mesh", Key: "pw"},
					NodeMeshMaxRestartTime: ms(2 * time.Minute), LogSeverityScreen: "Debug"},
				{Name: "node.node-a", ListenPort: 1791}}}},
		{name: "bgpfilter", files: map[string]string{"f.yaml": manifestFilter},
			want: Objects{Filters: []state.BGPFilter{{Name: "f1",
				ExportV4: []state.FilterRule{
					{Action: "Accept", MatchOperator: "In", CIDR: "10.0.0.0/8", PrefixLength: &state.PrefixLength{Min: 16, Max: 24}},
					{Action: "Reject", Source: "RemotePeers"}},
				ImportV6: []state.FilterRule{{Action: "Reject", Interface: "eth*"}}}}}},
		{name: "node-labels-and-calico-annotations", files: map[string]string{"n.yaml": manifestNode},
			want: Objects{Nodes: []state.Node{{Name: "node-a", Labels: map[string]string{"rack": "a", "zone": "1"},
				IPv4Address: "10.0.0.1/24", IPv6Address: "fd00::1/64", ASNumber: "64600", RRClusterID: "224.0.0.1"}}}},
		{name: "secret-data-and-string-data-any-namespace", files: map[string]string{"s.yaml": manifestSecrets},
			want: Objects{Secrets: []state.Secret{
				{Name: "bgp-secrets", Data: map[string]state.Password{
					"tor-a": state.NewPassword("hunter2"), "tor-b": state.NewPassword("s3cret")}},
				{Name: "mesh", Data: map[string]state.Password{"pw": state.NewPassword("1234")}}}}},
		{name: "bgppeer-both-groups-side-by-side", files: map[string]string{
			"a.yaml": manifestPeer("crd.projectcalico.org/v1", "b-peer", "65002"),
			"b.yaml": manifestPeer("projectcalico.org/v3", "a-peer", "65001") + "---\n" +
				manifestPeer("crd.projectcalico.org/v1", "c-peer", "65003")},
			want: Objects{Peers: []state.BGPPeer{filePeer("a-peer", 65001), filePeer("b-peer", 65002), filePeer("c-peer", 65003)}}},
		{name: "kubectl-list", files: map[string]string{"l.yaml": "apiVersion: v1\nkind: List\nitems:\n" +
			"- {apiVersion: crd.projectcalico.org/v1, kind: BGPPeer, metadata: {name: p1}, spec: {peerIP: 192.0.2.1, asNumber: 4200000000}}\n" +
			"- {apiVersion: v1, kind: Node, metadata: {name: n1, labels: {x: 1}}}\n" +
			"- {apiVersion: v1, kind: ConfigMap, metadata: {name: ignored}}\n"},
			want: Objects{Peers: []state.BGPPeer{filePeer("p1", 4200000000)},
				Nodes: []state.Node{{Name: "n1", Labels: map[string]string{"x": "1"}}}}},
		{name: "json-file", files: map[string]string{"p.json": "{\n\t\"apiVersion\": \"projectcalico.org/v3\",\n\t\"kind\": \"BGPPeer\",\n" +
			"\t\"metadata\": {\"name\": \"j\"},\n\t\"spec\": {\"peerIP\": \"192.0.2.1\", \"asNumber\": 65001}\n}\n"},
			want: Objects{Peers: []state.BGPPeer{filePeer("j", 65001)}}},
		{name: "other-files-kinds-and-empty-documents-ignored", files: map[string]string{
			"README.md":        "apiVersion: v1\nkind: Node\nmetadata: {name: not-read}\n",
			".hidden.yaml":     manifestPeer("projectcalico.org/v3", "hidden", "1"),
			"sub/nested.yaml":  manifestPeer("projectcalico.org/v3", "nested", "1"),
			"dir.yaml/x.yaml":  manifestPeer("projectcalico.org/v3", "in-dir", "1"),
			"upper.YML":        "---\n# only a comment\n---\n\n---\n" + manifestPeer("projectcalico.org/v3", "upper", "65001") + "...\n",
			"other-kinds.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n---\napiVersion: projectcalico.org/v3\nkind: FelixConfiguration\nmetadata: {name: p}\n---\napiVersion: v1\nkind: ConfigMap\n",
		},
			want: Objects{Peers: []state.BGPPeer{filePeer("upper", 65001)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeManifests(t, dir, tt.files)
			got, probs := LoadDir(dir)
			if len(probs) > 0 {
				t.Errorf("problems: %v", probs)
			}
			if d := cmp.Diff(tt.want, got, fileCmp); d != "" {
				t.Errorf("objects (-want +got):\n%s", d)
			}
		})
	}
}

func TestLoadDirProblems(t *testing.T) {
	good := manifestPeer("projectcalico.org/v3", "good-1", "65001")
	tests := []struct {
		name  string
		files map[string]string
		peers []state.BGPPeer
		want  []state.Problem
	}{
		{name: "duplicate-name-across-groups-first-file-wins", files: map[string]string{
			"a.yaml": manifestPeer("crd.projectcalico.org/v1", "tor", "65001"),
			"b.yaml": "# same peer, other group\n" + manifestPeer("projectcalico.org/v3", "tor", "65002")},
			peers: []state.BGPPeer{filePeer("tor", 65001)},
			want: []state.Problem{{Object: "file/b.yaml", Reason: `line 2: duplicate BGPPeer "tor" (projectcalico.org/v3) ignored: ` +
				`a.yaml line 1 defines it first as BGPPeer "tor" (crd.projectcalico.org/v1)`}}},
		{name: "duplicate-in-one-file", files: map[string]string{
			"a.yaml": manifestPeer("projectcalico.org/v3", "tor", "65001") + "---\n" + manifestPeer("projectcalico.org/v3", "tor", "65002")},
			peers: []state.BGPPeer{filePeer("tor", 65001)},
			want: []state.Problem{{Object: "file/a.yaml", Reason: `line 9: duplicate BGPPeer "tor" (projectcalico.org/v3) ignored: ` +
				`a.yaml line 1 defines it first as BGPPeer "tor" (projectcalico.org/v3)`}}},
		{name: "broken-document-between-good-ones", files: map[string]string{
			"a.yaml": good + "---\napiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata:\n  name: bad\n spec: x\n---\n" +
				manifestPeer("projectcalico.org/v3", "good-2", "65002")},
			peers: []state.BGPPeer{filePeer("good-1", 65001), filePeer("good-2", 65002)},
			want:  []state.Problem{{Object: "file/a.yaml", Reason: "line 13: invalid YAML: did not find expected key"}}},
		{name: "type-error-names-object-and-line", files: map[string]string{
			"a.yaml": good + "---\n" + manifestPeer("projectcalico.org/v3", "bad", "foo")},
			peers: []state.BGPPeer{filePeer("good-1", 65001)},
			want: []state.Problem{{Object: "file/a.yaml",
				Reason: `line 9: BGPPeer "bad" (projectcalico.org/v3): invalid AS Number format (foo)`}}},
		{name: "misspelt-field-is-carried-as-unsupported", files: map[string]string{
			"a.yaml": "apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {name: typo}\nspec: {nodeSelecter: x == 'y', peerIP: 192.0.2.1}\n"},
			peers: []state.BGPPeer{{Name: "typo", PeerIP: "192.0.2.1", Unsupported: []string{"spec.nodeSelecter"}}}},
		{name: "duplicate-field-rejects-calico-object", files: map[string]string{
			"a.yaml": "apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {name: twice}\nspec:\n  asNumber: 1\n  asNumber: 2\n"},
			want: []state.Problem{{Object: "file/a.yaml",
				Reason: `line 6: BGPPeer "twice" (projectcalico.org/v3): key "asNumber" already set in map`}}},
		{name: "unknown-bgp-kind-and-bad-version", files: map[string]string{
			"a.yaml": "apiVersion: projectcalico.org/v3\nkind: BGPPeers\nmetadata: {name: x}\n---\n" +
				"apiVersion: projectcalico.org/v1\nkind: BGPPeer\nmetadata: {name: y}\n"},
			want: []state.Problem{
				{Object: "file/a.yaml", Reason: `line 1: unknown kind "BGPPeers" in projectcalico.org/v3`},
				{Object: "file/a.yaml", Reason: `line 5: BGPPeer: unsupported apiVersion "projectcalico.org/v1" ` +
					`(want crd.projectcalico.org/v1 or projectcalico.org/v3)`}}},
		{name: "not-a-manifest", files: map[string]string{
			"a.yaml": "foo: bar\n---\n- a list\n---\napiVersion: v1\n---\nkind: BGPPeer\n"},
			want: []state.Problem{
				{Object: "file/a.yaml", Reason: "line 1: not a manifest: no apiVersion and kind"},
				{Object: "file/a.yaml", Reason: "line 3: not a manifest: a document must be a mapping with apiVersion and kind"},
				{Object: "file/a.yaml", Reason: "line 5: missing kind (apiVersion v1)"},
				{Object: "file/a.yaml", Reason: "line 7: BGPPeer: missing apiVersion"}}},
		{name: "missing-name", files: map[string]string{
			"a.yaml": "apiVersion: v1\nkind: Node\nmetadata: {labels: {a: b}}\n"},
			want: []state.Problem{{Object: "file/a.yaml", Reason: "line 1: Node: missing metadata.name"}}},
		{name: "list-item-error", files: map[string]string{
			"a.yaml": "# dump\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: projectcalico.org/v3, kind: BGPPeer, metadata: {name: p}, spec: {asNumber: x}}\n"},
			want: []state.Problem{{Object: "file/a.yaml",
				Reason: `line 2: item 1: BGPPeer "p" (projectcalico.org/v3): invalid AS Number format (x)`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeManifests(t, dir, tt.files)
			got, probs := LoadDir(dir)
			if d := cmp.Diff(tt.want, probs, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.peers, got.Peers, fileCmp); d != "" {
				t.Errorf("peers (-want +got):\n%s", d)
			}
		})
	}
}

func TestLoadDirUnreadable(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  []state.Problem
	}{
		{name: "dangling-symlink", setup: func(t *testing.T, dir string) {
			if err := os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "b.yaml")); err != nil {
				t.Skip("no symlinks:", err)
			}
		}, want: []state.Problem{{Object: "file/b.yaml", Reason: "cannot read the file: no such file or directory"}}},
		{name: "no-permission", setup: func(t *testing.T, dir string) {
			if os.Geteuid() == 0 {
				t.Skip("root reads every file")
			}
			writeManifests(t, dir, map[string]string{"b.yaml": manifestPeer("projectcalico.org/v3", "p", "1")})
			if err := os.Chmod(filepath.Join(dir, "b.yaml"), 0); err != nil {
				t.Fatal(err)
			}
		}, want: []state.Problem{{Object: "file/b.yaml", Reason: "cannot read the file: permission denied"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeManifests(t, dir, map[string]string{"a.yaml": manifestPeer("projectcalico.org/v3", "still-loaded", "65001")})
			tt.setup(t, dir)
			got, probs := LoadDir(dir)
			if d := cmp.Diff(tt.want, probs); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
			if d := cmp.Diff([]state.BGPPeer{filePeer("still-loaded", 65001)}, got.Peers, fileCmp); d != "" {
				t.Errorf("peers (-want +got):\n%s", d)
			}
		})
	}
}

func TestLoadDirMissingDirectory(t *testing.T) {
	got, probs := LoadDir(filepath.Join(t.TempDir(), "absent"))
	want := []state.Problem{{Object: "file/.", Reason: "cannot list the directory: no such file or directory"}}
	if d := cmp.Diff(want, probs); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
	if d := cmp.Diff(Objects{}, got, fileCmp); d != "" {
		t.Errorf("objects (-want +got):\n%s", d)
	}
}

func TestLoadObjectsActions(t *testing.T) {
	o := Objects{Peers: []state.BGPPeer{filePeer("p", 1)}, Secrets: []state.Secret{{Name: "s"}}}
	want := []state.Action{
		state.SourceSynced{Kind: state.KindNode},
		state.SourceSynced{Kind: state.KindBGPConfiguration},
		state.SourceSynced{Kind: state.KindBGPFilter},
		state.SourceSynced{Kind: state.KindSecret, Secrets: []state.Secret{{Name: "s"}}},
		state.SourceSynced{Kind: state.KindBGPPeer, Peers: []state.BGPPeer{filePeer("p", 1)}},
		state.SourceSynced{Kind: state.KindIPPool},
		state.SourceSynced{Kind: state.KindBlockAffinity},
		state.SourceSynced{Kind: state.KindPod},
		state.SourceSynced{Kind: state.KindService},
		state.SourceSynced{Kind: state.KindEndpointSlice},
	}
	if d := cmp.Diff(want, o.Actions(), fileCmp); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
}

// TestManifestSecretOtherNamespace: a Secret "s" of another namespace in a
// file that sorts first used to stand in for the agent namespace's "s"; it
// is now a problem and is not read, and the agent's own "s" loads.
func TestManifestSecretOtherNamespace(t *testing.T) {
	dir := t.TempDir()
	writeManifests(t, dir, map[string]string{
		"0-evil.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: evil-ns}\nstringData: {password: attacker}\n",
		"1-own.yaml":  "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: calico-vpp-dataplane}\nstringData: {k: own}\n",
	})
	objs, probs := LoadDir(dir)
	want := []state.Secret{{Name: "s", Data: map[string]state.Password{"k": state.NewPassword("own")}}}
	if d := cmp.Diff(want, objs.Secrets, fileCmp); d != "" {
		t.Errorf("secrets (-want +got):\n%s", d)
	}
	wantProbs := []state.Problem{{Object: "file/0-evil.yaml", Reason: `line 1: Secret "s" (namespace "evil-ns") ignored: ` +
		`Secrets are read from the agent's namespace "calico-vpp-dataplane" only`}}
	if d := cmp.Diff(wantProbs, probs); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
}

// TestNULByteLine: a NUL byte on line 4 used to be reported on line 1.
func TestNULByteLine(t *testing.T) {
	dir := t.TempDir()
	writeManifests(t, dir, map[string]string{"a.yaml": "# c\n---\napiVersion: v1\nkind: Node\nmetadata: {name: \"a\x00b\"}\n"})
	_, probs := LoadDir(dir)
	want := []state.Problem{{Object: "file/a.yaml", Reason: "line 5: invalid YAML: control characters are not allowed"}}
	if d := cmp.Diff(want, probs); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
}
