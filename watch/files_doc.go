package watch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/peeragent/peeragent/state"
)

// fileProblem is a problem of one file, at a line (0: the whole file).
type fileProblem struct {
	line   int
	reason string
}

// fileDecoder decodes the documents of one manifest file, collecting its
// objects and problems.
type fileDecoder struct {
	namespace string // the agent's: Secrets of another namespace are not read
	node      string // the agent's: Pods of another node are not read
	objects   []manifestObject
	problems  []fileProblem
}

// docPos is where an object being decoded sits: the document's content
// line and first line, and, for an item of a List, its index.
type docPos struct {
	line, start int
	item        int // 1-based index in a List; 0 for a top-level object
}

// decodeManifest decodes every document of a file. A document that cannot
// be read is a problem and is skipped; the others still load.
func decodeManifest(data []byte) ([]manifestObject, []fileProblem) {
	return decodeManifestIn(data, state.DefaultNamespace, "")
}

// decodeManifestIn is decodeManifest for an agent in namespace.
func decodeManifestIn(data []byte, namespace, node string) ([]manifestObject, []fileProblem) {
	d := &fileDecoder{namespace: namespace, node: node}
	for _, doc := range splitManifest(data) {
		d.document(doc)
	}
	return d.objects, d.problems
}

// problem records a problem at line; detail is redacted of secrets.
func (d *fileDecoder) problem(pos docPos, line int, detail string, secrets []string) {
	if pos.item > 0 {
		detail = fmt.Sprintf("item %d: %s", pos.item, detail)
	}
	d.problems = append(d.problems, fileProblem{line: line, reason: redactSecrets(detail, secrets)})
}

func (d *fileDecoder) document(doc manifestDoc) {
	pos := docPos{line: doc.line, start: doc.start}
	if why := checkExpansion(doc.text); why != "" {
		d.problem(pos, pos.line, why, nil)
		return
	}
	text, tree := convertManifestDoc(doc.text)
	if text.json == nil {
		var err error
		if tree, err = parseManifestTree(doc.text); err != nil {
			line, detail := yamlSyntaxProblem(err)
			if line == 0 {
				line = controlCharLine(doc.text) // go-yaml gives none for a NUL byte
			}
			d.problem(pos, min(pos.absolute(line), doc.lastLine()), detail, nil)
			return
		}
	}
	d.object(tree, text, pos, manifestSecretValues(tree))
}

// object decodes one object (a document, or an item of a List) whose
// generic form is tree and whose text is text.
func (d *fileDecoder) object(tree any, text manifestText, pos docPos, secrets []string) {
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
	label := manifestLabel(apiVersion, kind, meta)
	if ns, _ := meta["namespace"].(string); mk.kind == state.KindSecret && ns != "" && ns != d.namespace {
		d.problem(pos, pos.line, fmt.Sprintf("%s ignored: Secrets are read from the agent's namespace %q only", label, d.namespace), secrets)
		return
	}
	if mk.kind == state.KindSecret {
		d.unknownSecretFields(m, pos, label, secrets)
	}
	value, name, err := mk.decode(text)
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
			return // another node's Pod, silently: only this node's are read (docs/routes.md "Amendment to §1")
		}
		value = p.pod
	}
	d.objects = append(d.objects, manifestObject{kind: mk.kind, name: name, label: label,
		line: pos.line, value: value, secrets: secrets})
}

// secretFields are the fields of a v1 Secret. A Secret is decoded
// leniently (its data is all that is read), but a misspelt field
// (`stringDta`) would leave it without the data meant for it and the
// neighbor only "waiting for secret": each other field is a problem naming
// it (docs/semantics.md §7: nothing is silently ignored); the rest of the
// Secret is still read.
var secretFields = []string{"apiVersion", "kind", "metadata", "data", "stringData", "type", "immutable"}

func (d *fileDecoder) unknownSecretFields(m map[string]any, pos docPos, label string, secrets []string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.ContainsFunc(secretFields, func(f string) bool { return strings.EqualFold(f, k) }) {
			d.problem(pos, pos.line, fmt.Sprintf("%s: unknown field %q (a Secret has %s); its data is not read",
				label, k, strings.Join(secretFields, ", ")), secrets)
		}
	}
}

// list decodes the items of a v1 List (as `kubectl get -o yaml` writes).
func (d *fileDecoder) list(m map[string]any, pos docPos, secrets []string) {
	items, ok := m["items"].([]any)
	if !ok && m["items"] != nil {
		d.problem(pos, pos.line, "List: items is not a list", secrets)
		return
	}
	for i, item := range items {
		// An item is decoded from its JSON read back as YAML, as it always
		// was: YAML reads that JSON's numbers and strings its own way (1.0
		// is the integer 1), so the JSON itself could decode otherwise.
		raw, err := json.Marshal(item)
		if err != nil { // cannot happen for parsed YAML; keep the item out
			d.problem(pos, pos.line, fmt.Sprintf("List: item %d cannot be re-encoded", i+1), secrets)
			continue
		}
		d.object(item, manifestText{yaml: raw}, docPos{line: pos.line, start: pos.start, item: i + 1}, secrets)
	}
}

// absolute maps a go-yaml line number within the document to the file's,
// or returns the document's line when there is none (0).
func (p docPos) absolute(line int) int {
	if line <= 0 || p.item > 0 {
		return p.line
	}
	return p.start + line - 1
}

// The prefixes sigs.k8s.io/yaml and go-yaml wrap their errors in.
var yamlErrorPrefixes = []string{"error converting YAML to JSON: ", "error unmarshaling JSON: ",
	"while decoding JSON: ", "yaml: "}

var (
	yamlLineRef     = regexp.MustCompile(`\bline \d+:`)
	yamlLeadingLine = regexp.MustCompile(`^line (\d+): `)
)

// decodeError turns a typed decode error into a line and a one-line
// detail, with go-yaml's document-relative line numbers made the file's.
func (p docPos) decodeError(err error) (int, string) {
	msg := trimYAMLPrefixes(err.Error())
	msg = yamlLineRef.ReplaceAllStringFunc(msg, func(s string) string {
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(s, "line "), ":"))
		return "line " + strconv.Itoa(p.absolute(n)) + ":"
	})
	msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "unmarshal errors:", "")), " ")
	if m := yamlLeadingLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, msg[len(m[0]):]
	}
	return p.line, msg
}

func trimYAMLPrefixes(msg string) string {
	for again := true; again; {
		again = false
		for _, p := range yamlErrorPrefixes {
			if strings.HasPrefix(msg, p) {
				msg, again = msg[len(p):], true
			}
		}
	}
	return msg
}

// controlCharLine is the line (in the document, from 1) of its first
// control character that YAML refuses, or 0 when there is none.
func controlCharLine(text []byte) int {
	for i, c := range text {
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
			return 1 + bytes.Count(text[:i], []byte("\n"))
		}
	}
	return 0
}
