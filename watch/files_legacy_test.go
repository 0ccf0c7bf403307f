package watch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	v3 "github.com/projectcalico/api/pkg/apis/projectcalico/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/yaml"

	"github.com/peeragent/peeragent/state"
)

// legacyDecodeManifestIn is the manifest decoder as it was before each
// document was converted from YAML to JSON once (main f8703ae,
// files_doc.go and files_decode.go), kept verbatim but for names: the
// generic tree and each typed decode converted the YAML on their own. It
// is the oracle of TestDecodeManifestSameAsLegacy and
// FuzzDecodeManifestSameAsLegacy. It shares with today's decoder only
// what did not change (the alias bound, lookupManifestKind, redaction,
// the converters of convert.go).
func legacyDecodeManifestIn(data []byte, namespace, node string) ([]manifestObject, []fileProblem) {
	d := &legacyDecoder{fileDecoder{namespace: namespace, node: node}}
	for _, doc := range legacySplitManifest(data) {
		d.document(doc)
	}
	return d.objects, d.problems
}

type legacyDecoder struct{ fileDecoder }

// legacyKinds are the typed decodes of legacy manifestKinds, by the kind
// lookupManifestKind returns.
var legacyKinds = map[state.Kind]func(raw []byte) (any, string, error){
	state.KindBGPPeer:          legacyDecodePeer,
	state.KindBGPConfiguration: legacyDecodeConfig,
	state.KindBGPFilter:        legacyDecodeFilter,
	state.KindBlockAffinity:    legacyDecodeAffinity,
	state.KindIPPool:           legacyDecodePool,
	state.KindNode:             legacyDecodeNode,
	state.KindSecret:           legacyDecodeSecret,
	state.KindPod:              legacyDecodePod,
	state.KindService:          legacyDecodeService,
	state.KindEndpointSlice:    legacyDecodeSlice,
}

func (d *legacyDecoder) document(doc manifestDoc) {
	pos := docPos{line: doc.line, start: doc.start}
	if why := checkExpansion(doc.text); why != "" {
		d.problem(pos, pos.line, why, nil)
		return
	}
	tree, err := legacyParseTree(doc.text)
	if err != nil {
		line, detail := yamlSyntaxProblem(err)
		if line == 0 {
			line = controlCharLine(doc.text) // go-yaml gives none for a NUL byte
		}
		d.problem(pos, min(pos.absolute(line), doc.lastLine()), detail, nil)
		return
	}
	d.object(tree, doc.text, pos, manifestSecretValues(tree))
}

func (d *legacyDecoder) object(tree any, raw []byte, pos docPos, secrets []string) {
	m, ok := tree.(map[string]any)
	if !ok {
		if tree != nil {
			d.problem(pos, pos.line, "not a manifest: a document must be a mapping with apiVersion and kind", secrets)
		}
		return
	}
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	if apiVersion == "v1" && kind == "List" && pos.item == 0 {
		d.list(m, pos, secrets)
		return
	}
	mk, reason, ok := lookupManifestKind(apiVersion, kind)
	if !ok {
		if reason != "" {
			d.problem(pos, pos.line, reason, secrets)
		}
		return
	}
	meta, _ := m["metadata"].(map[string]any)
	label := legacyManifestLabel(apiVersion, kind, meta)
	if ns, _ := meta["namespace"].(string); mk.kind == state.KindSecret && ns != "" && ns != d.namespace {
		d.problem(pos, pos.line, fmt.Sprintf("%s ignored: Secrets are read from the agent's namespace %q only", label, d.namespace), secrets)
		return
	}
	if mk.kind == state.KindSecret {
		d.unknownSecretFields(m, pos, label, secrets)
	}
	value, name, err := legacyKinds[mk.kind](raw)
	if err != nil {
		line, detail := pos.decodeError(err)
		d.problem(pos, line, label+": "+detail, secrets)
		return
	}
	if name == "" {
		d.problem(pos, pos.line, kind+": missing metadata.name", secrets)
		return
	}
	if p, ok := value.(manifestPod); ok {
		if d.node == "" || p.node != d.node {
			return
		}
		value = p.pod
	}
	d.objects = append(d.objects, manifestObject{kind: mk.kind, name: name, label: label,
		line: pos.line, value: value, secrets: secrets})
}

func (d *legacyDecoder) list(m map[string]any, pos docPos, secrets []string) {
	items, ok := m["items"].([]any)
	if !ok && m["items"] != nil {
		d.problem(pos, pos.line, "List: items is not a list", secrets)
		return
	}
	for i, item := range items {
		raw, err := json.Marshal(item)
		if err != nil {
			d.problem(pos, pos.line, fmt.Sprintf("List: item %d cannot be re-encoded", i+1), secrets)
			continue
		}
		d.object(item, raw, docPos{line: pos.line, start: pos.start, item: i + 1}, secrets)
	}
}

func legacyParseTree(raw []byte) (any, error) {
	var tree any
	err := yaml.Unmarshal(raw, &tree, func(d *json.Decoder) *json.Decoder { d.UseNumber(); return d })
	return tree, err
}

func legacyDecodePeer(raw []byte) (any, string, error) {
	var p v3.BGPPeer
	j, unknown, err := legacyDecodeCalico(raw, &p)
	return withNewer(Peer(&p), j, unknown), p.Name, err
}

func legacyDecodeConfig(raw []byte) (any, string, error) {
	var c v3.BGPConfiguration
	j, unknown, err := legacyDecodeCalico(raw, &c)
	return withNewer(Config(&c), j, unknown), c.Name, err
}

func legacyDecodeFilter(raw []byte) (any, string, error) {
	var f v3.BGPFilter
	j, unknown, err := legacyDecodeCalico(raw, &f)
	return withNewer(Filter(&f), j, unknown), f.Name, err
}

func legacyDecodeAffinity(raw []byte) (any, string, error) {
	var a BlockAffinityObject
	j, unknown, err := legacyDecodeCalico(raw, &a)
	return withNewer(Affinity(&a), j, unknown), a.Name, err
}

func legacyDecodePool(raw []byte) (any, string, error) {
	var p v3.IPPool
	j, unknown, err := legacyDecodeCalico(raw, &p)
	return withNewer(Pool(&p), j, unknown), p.Name, err
}

func legacyDecodeCalico(raw []byte, into any) ([]byte, []string, error) {
	j, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return nil, nil, err
	}
	unknown, err := decodeCalicoJSON(j, into)
	return j, unknown, err
}

func legacyDecodeNode(raw []byte) (any, string, error) {
	var n corev1.Node
	err := yaml.Unmarshal(raw, &n)
	return Node(&n), n.Name, err
}

func legacyDecodePod(raw []byte) (any, string, error) {
	var p corev1.Pod
	err := yaml.Unmarshal(raw, &p)
	if p.Namespace == "" {
		p.Namespace = "default"
	}
	name := ""
	if p.Name != "" {
		name = p.Namespace + "/" + p.Name
	}
	return manifestPod{pod: Pod(&p), node: p.Spec.NodeName}, name, err
}

func legacyDecodeService(raw []byte) (any, string, error) {
	var s corev1.Service
	err := yaml.Unmarshal(raw, &s)
	if s.Namespace == "" {
		s.Namespace = "default"
	}
	return Service(&s), namespacedName(s.Namespace, s.Name), err
}

func legacyDecodeSlice(raw []byte) (any, string, error) {
	var e discoveryv1.EndpointSlice
	err := yaml.Unmarshal(raw, &e)
	if e.Namespace == "" {
		e.Namespace = "default"
	}
	return EndpointSlice(&e), namespacedName(e.Namespace, e.Name), err
}

func legacyDecodeSecret(raw []byte) (any, string, error) {
	var s corev1.Secret
	if err := yaml.Unmarshal(raw, &s); err != nil {
		if strings.Contains(err.Error(), "base64") {
			return nil, s.Name, fmt.Errorf("data is not valid base64 (%s)", secretWithheld)
		}
		return nil, s.Name, fmt.Errorf("does not decode as a v1 Secret (%s)", secretWithheld)
	}
	return Secret(&s), s.Name, nil
}

func legacySplitManifest(data []byte) []manifestDoc {
	var docs []manifestDoc
	var buf []byte
	start := 1
	flush := func(next int) {
		if first := legacyFirstContentLine(buf); first > 0 {
			docs = append(docs, manifestDoc{start: start, line: start + first - 1, text: buf})
		}
		buf, start = nil, next
	}
	for i, l := range bytes.SplitAfter(data, []byte("\n")) {
		n := i + 1
		switch {
		case isDocMarker(l, "---"):
			flush(n)
			buf = append(buf, l...)
		case isDocMarker(l, "..."):
			buf = append(buf, l...)
			flush(n + 1)
		default:
			buf = append(buf, l...)
		}
	}
	flush(0)
	return docs
}

func legacyFirstContentLine(doc []byte) int {
	for i, l := range bytes.SplitAfter(doc, []byte("\n")) {
		t := bytes.TrimSpace(l)
		if bytes.HasPrefix(t, []byte("---")) && isDocMarker(l, "---") {
			t = bytes.TrimSpace(t[3:])
		}
		if len(t) > 0 && t[0] != '#' && !isDocMarker(l, "...") {
			return i + 1
		}
	}
	return 0
}

func legacyManifestLabel(apiVersion, kind string, meta map[string]any) string {
	name, _ := meta["name"].(string)
	label := fmt.Sprintf("%s %q", kind, name)
	if apiVersion != "v1" {
		return label + " (" + apiVersion + ")"
	}
	if ns, _ := meta["namespace"].(string); kind == "Secret" && ns != "" {
		label += fmt.Sprintf(" (namespace %q)", ns)
	}
	return label
}
