package watch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/peeragent/peeragent/state"
)

// The manifest decoder converts each document's YAML to JSON once
// (convertManifestDoc) where it used to convert it for the generic tree
// and again for the typed decode. Its results must be exactly the old
// ones: these tests decode a corpus with both (legacyDecodeManifestIn is
// the old decoder) and compare objects, values, labels, lines, secrets and
// problems.

// hostileManifests are documents where the one conversion could differ
// from the two: repeated keys in each kind, in metadata, spec and labels,
// and in a List's item; syntax errors; aliases and merges; numbers and
// booleans where a lenient type has strings; Secrets with unknown fields,
// bad data and other namespaces; NUL bytes; tags; JSON documents.
var hostileManifests = func() []string {
	out := []string{
		// repeated keys, top level and nested, in each kind
		"apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  name: m\n",
		"apiVersion: v1\nkind: Node\nkind: Node\nmetadata: {name: n}\n",
		"apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels: {a: x, a: y}\n",
		"apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  annotations:\n    projectcalico.org/IPv4Address: 10.0.0.1/24\n    projectcalico.org/IPv4Address: 10.0.0.2/24\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {pw: one, pw: two}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {pw: b25l}\ndata: {pw: dHdv}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec: {nodeName: node-a, nodeName: node-b}\nstatus: {podIPs: [{ip: 10.1.0.1}]}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {nodeName: node-b, nodeName: node-a}\nstatus: {phase: Running, podIP: 10.1.0.2, podIP: 10.1.0.3}\n",
		"apiVersion: v1\nkind: Service\nmetadata: {name: s, name: t}\nspec: {clusterIP: 10.96.0.1, type: ClusterIP}\n",
		"apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: e, labels: {kubernetes.io/service-name: s, kubernetes.io/service-name: t}}\naddressType: IPv4\nendpoints: [{addresses: [10.1.0.1]}]\n",
		"apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {name: p}\nspec: {peerIP: 10.0.0.1, peerIP: 10.0.0.2, asNumber: 65001}\n",
		"apiVersion: crd.projectcalico.org/v1\nkind: BGPConfiguration\nmetadata: {name: default}\nspec: {asNumber: 64512, asNumber: 64513}\n",
		"apiVersion: crd.projectcalico.org/v1\nkind: BGPFilter\nmetadata: {name: f, name: g}\nspec: {}\n",
		"apiVersion: crd.projectcalico.org/v1\nkind: BlockAffinity\nmetadata: {name: b}\nspec: {node: node-a, node: node-b, cidr: 10.244.0.0/26, state: confirmed, deleted: \"false\"}\n",
		"apiVersion: crd.projectcalico.org/v1\nkind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.244.0.0/16, cidr: 10.245.0.0/16}\n",
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: n, name: m}\n- apiVersion: projectcalico.org/v3\n  kind: BGPPeer\n  metadata: {name: p}\n  spec: {peerIP: 10.0.0.1, asNumber: 65001, asNumber: 65002}\n",
		"apiVersion: v1\nkind: List\nkind: List\nitems: []\n",
		// keys that differ only in case
		"apiVersion: v1\nkind: Node\nmetadata: {name: n, Name: m}\n",
		"apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {name: p}\nspec: {peerIP: 10.0.0.1, PeerIP: 10.0.0.2, asNumber: 65001}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {pw: x}\nStringData: {pw: y}\n",
		// numbers and booleans where the lenient types have strings
		"apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels: {rack: 1, zone: true, ratio: 1.50, big: 18446744073709551615, neg: -3, yes: yes, off: off, nul: null}\n",
		"apiVersion: v1\nkind: Node\nmetadata:\n  name: 12\n  annotations: {projectcalico.org/ASNumber: 65001, projectcalico.org/IPv4Address: 10.0.0.1/24}\n",
		"apiVersion: v1\nkind: Node\nmetadata:\n  name: 1.0\n  labels: {f: 1e3, g: .inf, h: 0x10, i: 010}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: 7, namespace: 8}\nspec: {nodeName: node-a, hostNetwork: yes}\nstatus: {phase: 1, podIPs: [{ip: 10.1.0.1}]}\n",
		"apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: true}\nspec: {clusterIP: 10.96.0.1, ports: [{port: \"80\", targetPort: 8080}, {port: 81, targetPort: http}]}\n",
		"apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: e, labels: {kubernetes.io/service-name: 5}}\naddressType: IPv4\nendpoints: [{addresses: [10.1.0.1], conditions: {ready: yes}}]\nports: [{port: 80, name: 1}]\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {pw: 12, on: true, f: 1.5}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {pw: 12}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntype: 5\nimmutable: \"yes\"\ndata: {pw: aGk=}\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {capacity: {cpu: 4, memory: 1.5}, addresses: [{type: InternalIP, address: 10.0.0.1}]}\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec: {unschedulable: \"true\", taints: [{key: k, effect: 1}], configSource: null}\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: n, creationTimestamp: 2024-01-01T00:00:00Z, generation: \"3\"}\n",
		// Secrets: unknown fields, bad data, other namespaces, keys of any case
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringDta: {pw: hunter2}\nDATA: {k: aGk=}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {pw: not-base64!}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: other}\nstringData: {pw: hunter2}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: default}\nstringData: {pw: hunter2}\nspec: {pw: hunter2}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: [hunter2]\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {pw: {nested: hunter2}}\n",
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: s}\n  stringData: {pw: hunter2}\n  bogus: 1\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: s}\n  data: {pw: '!!!'}\n",
		// syntax errors
		"apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n labels: {}\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: n\n",
		"apiVersion: v1\nkind: Node\nmetadata: [name: n}\n",
		"apiVersion: v1\n\tkind: Node\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {pw: 'hunter2}\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: *missing}\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: !!int abc}\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: !!binary aGk=}\n",
		"? [complex, key]\n: v\n",
		"? {a: b}\n: v\napiVersion: v1\nkind: Node\n",
		"1.5: x\ntrue: y\napiVersion: v1\nkind: Node\nmetadata: {name: n}\n",
		"0.123456789: x\n1e100: y\n-.inf: z\n.nan: w\n7: v\nno: u\napiVersion: v1\nkind: Node\nmetadata: {name: n, labels: {0.1: a, 12345678901: b, false: c}}\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: n, labels: {a: 0.123456789, b: 1e100, c: 1e-7, d: -0.0, e: 123456789012345678901234567890, f: 0o17, g: 1_000, h: 0b101, i: 2001-12-14t21:59:43.10-05:00}}\n",
		"~: x\napiVersion: v1\nkind: Node\nmetadata: {name: n}\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec: {podCIDR: .nan}\n",
		"%YAML 1.1\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n}\n",
		"%YAML 1.1\n%YAML 1.1\n---\napiVersion: v1\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: \"\\xZZ\"}\n",
		"apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  - x\n",
		// aliases and merges
		"base: &b {apiVersion: v1, kind: Node}\n<<: *b\nmetadata: {name: n}\n",
		"base: &b {name: n, labels: {a: x}}\napiVersion: v1\nkind: Node\nmetadata:\n  <<: *b\n  name: m\n",
		"base: &b {name: n}\napiVersion: v1\nkind: Node\nmetadata:\n  name: m\n  <<: *b\n",
		"apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {name: &n p}\nspec: {peerIP: 10.0.0.1, asNumber: 65001, node: *n}\n",
		"apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {name: p}\nx: &s {peerIP: 10.0.0.1, asNumber: 65001}\nspec: *s\n",
		"apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {name: p}\nspec:\n  <<: {peerIP: 10.0.0.1, asNumber: 65001}\n  asNumber: 65002\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: &d {pw: hunter2}\nx: *d\n",
		"a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n",
		aliasBomb(),
		// Lists
		"apiVersion: v1\nkind: List\nitems: {a: b}\n",
		"apiVersion: v1\nkind: List\nitems: null\n",
		"apiVersion: v1\nkind: List\nitems:\n- 1\n- [a]\n- apiVersion: v1\n  kind: List\n  items: []\n- apiVersion: v1\n  kind: Node\n  metadata: {name: n, labels: {rack: 1}}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec: {nodeName: node-a}\n  status: {podIPs: [{ip: 10.1.0.1}]}\n",
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: crd.projectcalico.org/v1\n  kind: BGPConfiguration\n  metadata: {name: default}\n  spec: {asNumber: 64512.0, listenPort: 1e2}\n- apiVersion: crd.projectcalico.org/v1\n  kind: IPPool\n  metadata: {name: p}\n  spec: {cidr: 10.244.0.0/16, blockSize: 26.0}\n",
		"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":1.0}}}]}",
		// JSON documents
		"{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"BGPPeer\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"peerIP\":\"10.0.0.1\",\"asNumber\":65001}}",
		"{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"BGPPeer\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"peerIP\":\"10.0.0.1\",\"asNumber\":65001.0}}",
		"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n\",\"name\":\"m\"}}",
		"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"\\u00e9\\ud83d\\ude00\"}}}",
		"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n\"}} trailing",
		// Calico oddities: unknown fields, wide AS numbers, wrong types
		"apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {name: p}\nspec: {peerIP: 10.0.0.1, asNumber: 4294967296, keepaliveTime: 10s}\n",
		"apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {name: p}\nspec: {peerIP: 10.0.0.1, asNumber: \"65001\"}\n",
		"apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {name: p, labels: {a: 1}}\nspec: {peerIP: 10.0.0.1, asNumber: 65001}\n",
		"apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {name: p}\nspec: {peerIP: 10.0.0.1, asNumber: 65001, password: {secretKeyRef: {name: s, key: pw}}}\n",
		"apiVersion: projectcalico.org/v2\nkind: BGPPeer\nmetadata: {name: p}\n",
		"apiVersion: projectcalico.org/v3\nkind: BGPPeers\nmetadata: {name: p}\n",
		"apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {}\nspec: {peerIP: 10.0.0.1, asNumber: 65001}\n",
		"kind: BGPPeer\n",
		"apiVersion: v1\n",
		"just a scalar\n",
		"- a\n- b\n",
		"null\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: v, k: w}\n",
		// NUL bytes and control characters
		"apiVersion: v1\nkind: Node\nmetadata: {name: n\x00}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {pw: \"hun\x00ter2\"}\n",
		"\x00",
		"apiVersion: v1\nkind: Node\x7f\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: \"n\\0\"}\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: \"\xff\xfe\"}\n",
		// several documents, markers
		"---\napiVersion: v1\nkind: Node\nmetadata: {name: a}\n...\n--- # c\napiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\nkind: Node\nkind: Node\n---\n",
		"apiVersion: v1\r\nkind: Node\r\nmetadata: {name: a}\r\n---\r\napiVersion: v1\r\nkind: Node\r\nmetadata:\r\n  name: b\r\n  name: c",
		"--- {apiVersion: v1, kind: Node, metadata: {name: a}}\n---\t# c\n\n# only a comment\n...\n...\n--- \napiVersion: v1\nkind: Node\nmetadata: {name: a}\n---x: 1\n----\n",
		"",
		"\n\n# nothing\n---\n---\n",
	}
	return out
}()

// manifestCorpus is what the comparison decodes: the hostile documents,
// meshsim's cluster.yaml and the fuzz seeds, then from docs[goldens] each
// golden input object (once) as its manifest.
type manifestCorpus struct {
	docs    []string
	goldens int
}

func decodeCorpus(t *testing.T) manifestCorpus {
	t.Helper()
	corpus := append([]string{}, hostileManifests...)
	corpus = append(corpus, string(meshManifest(10)))
	seeds, err := filepath.Glob("testdata/fuzz/FuzzLoadDocument/*")
	if err != nil || len(seeds) == 0 {
		t.Fatalf("no seeds: %v", err)
	}
	for _, f := range seeds {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if arg, ok := strings.CutPrefix(line, "[]byte("); ok {
				s, err := strconv.Unquote(strings.TrimSuffix(arg, ")"))
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				corpus = append(corpus, s)
			}
		}
	}
	goldens := len(corpus)
	seen := map[string]bool{}
	forEachGoldenObject(t, func(_ string, obj any, node, ns string) {
		if doc, err := goldenManifest(obj, node, ns); err == nil && ns == state.DefaultNamespace && !seen[string(doc)] {
			corpus = append(corpus, string(doc))
			seen[string(doc)] = true
		}
	})
	if len(seen) == 0 {
		t.Fatal("no golden manifests")
	}
	return manifestCorpus{docs: corpus, goldens: goldens}
}

func TestDecodeManifestSameAsLegacy(t *testing.T) {
	corpus := decodeCorpus(t)
	for i, doc := range corpus.docs {
		checkSameAsLegacy(t, fmt.Sprintf("document %d", i), []byte(doc))
	}
	// And each document mutated as a hand editing it might: a line
	// repeated (a repeated key), dropped or moved, a value made a number,
	// a boolean, null or a collection, a NUL byte, an alias.
	// The alias bomb's mutations would only time its bound (files_bound_test.go).
	rng := rand.New(rand.NewPCG(23, 23))
	mutated := 0
	for i, doc := range corpus.docs {
		n := 12
		if i >= corpus.goldens {
			n = 2 // many, and alike
		}
		for j := range n {
			if len(doc) > 64<<10 {
				break
			}
			m := mutateManifest(rng, []byte(doc))
			checkSameAsLegacy(t, fmt.Sprintf("document %d, mutation %d", i, j), m)
			mutated++
		}
	}
	t.Logf("%d documents (%d from goldens), %d mutations", len(corpus.docs), len(corpus.docs)-corpus.goldens, mutated)
}

var mutationValues = []string{"1", "true", "1.50", "-0", "null", "[]", "{}", "yes", "\"x\"", "1e3", "*a", "&a x",
	"18446744073709551616", ".inf", "'", "{a: 1, a: 2}", "\x00"}

func mutateManifest(rng *rand.Rand, doc []byte) []byte {
	lines := bytes.SplitAfter(doc, []byte("\n"))
	n := len(lines)
	i := rng.IntN(n)
	switch rng.IntN(5) {
	case 0: // repeat a line
		lines = append(lines[:i+1], lines[i:]...)
	case 1: // drop a line
		lines = append(lines[:i], lines[i+1:]...)
	case 2: // move a line
		l := lines[i]
		lines = append(lines[:i], lines[i+1:]...)
		j := rng.IntN(len(lines) + 1)
		lines = append(lines[:j], append([][]byte{l}, lines[j:]...)...)
	default: // replace a value
		l := lines[i]
		if k := bytes.LastIndex(l, []byte(": ")); k >= 0 {
			v := mutationValues[rng.IntN(len(mutationValues))]
			lines[i] = []byte(string(l[:k+2]) + v + "\n")
		} else {
			lines[i] = append([]byte(mutationValues[rng.IntN(len(mutationValues))]), l...)
		}
	}
	return bytes.Join(lines, nil)
}

func checkSameAsLegacy(t *testing.T, where string, doc []byte) {
	t.Helper()
	checkManifestJSON(t, where, doc)
	if docs, want := splitManifest(doc), legacySplitManifest(doc); !reflect.DeepEqual(docs, want) {
		t.Errorf("%s: split into\n  %+v\nthe legacy split\n  %+v\nfile:\n%q", where, docs, want, doc)
	}
	for _, node := range []string{"", "node-a"} {
		objs, probs := decodeManifestIn(doc, state.DefaultNamespace, node)
		wantObjs, wantProbs := legacyDecodeManifestIn(doc, state.DefaultNamespace, node)
		if !reflect.DeepEqual(probs, wantProbs) {
			t.Errorf("%s (node %q): problems\n  %v\nthe legacy decoder's\n  %v\ndocument:\n%q", where, node, probs, wantProbs, doc)
		}
		if !reflect.DeepEqual(objs, wantObjs) {
			t.Errorf("%s (node %q): objects\n  %+v\nthe legacy decoder's\n  %+v\ndocument:\n%q", where, node, objs, wantObjs, doc)
		}
	}
}

// FuzzDecodeManifestSameAsLegacy decodes arbitrary bytes with both
// decoders. Seeds: the hostile documents.
func FuzzDecodeManifestSameAsLegacy(f *testing.F) {
	for _, doc := range hostileManifests {
		f.Add([]byte(doc))
	}
	f.Add(meshManifest(2))
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkSameAsLegacy(t, "input", doc)
	})
}

// checkManifestJSON checks manifestJSON against sigs.k8s.io/yaml on each
// document of doc: where it converts, the JSON is YAMLToJSONStrict's byte
// for byte and the tree is that JSON decoded with UseNumber.
func checkManifestJSON(t *testing.T, where string, doc []byte) {
	t.Helper()
	for _, d := range splitManifest(doc) {
		if checkExpansion(d.text) != "" {
			continue // not converted at all
		}
		j, tree, ok := manifestJSON(d.text)
		if !ok {
			continue // read the old way
		}
		want, err := yaml.YAMLToJSONStrict(d.text)
		if err != nil {
			t.Errorf("%s: manifestJSON converts what YAMLToJSONStrict refuses (%v):\n%q", where, err, d.text)
			continue
		}
		if !bytes.Equal(j, want) {
			t.Errorf("%s: manifestJSON gives\n  %s\nYAMLToJSONStrict\n  %s\ndocument:\n%q", where, j, want, d.text)
		}
		var wantTree any
		dec := json.NewDecoder(bytes.NewReader(want))
		dec.UseNumber()
		if err := dec.Decode(&wantTree); err != nil {
			t.Errorf("%s: %v", where, err)
		}
		if !reflect.DeepEqual(tree, wantTree) {
			t.Errorf("%s: manifestJSON's tree\n  %#v\nthe JSON's\n  %#v\ndocument:\n%q", where, tree, wantTree, d.text)
		}
	}
}
