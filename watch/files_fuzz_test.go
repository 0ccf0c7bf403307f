package watch

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/peeragent/peeragent/state"
)

// FuzzLoadDocument decodes arbitrary bytes as one manifest file: it never
// panics, is deterministic, names the file and a line in every problem,
// and no problem about a document quotes a value of the Secrets in it.
// The Secrets' values are found here independently of the loader, by
// decoding into corev1.Secret. Seeds: testdata/fuzz/FuzzLoadDocument.
func FuzzLoadDocument(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		files := []fileInput{{name: "f.yaml", data: data}}
		_, probs := loadFiles(files, state.DefaultNamespace, "node-a")
		_, again := loadFiles(files, state.DefaultNamespace, "node-a")
		if !slices.Equal(probs["file/f.yaml"], again["file/f.yaml"]) {
			t.Fatalf("not deterministic: %v then %v", probs, again)
		}
		docs := splitManifest(data)
		for _, p := range probs["file/f.yaml"] {
			m := fuzzLine.FindStringSubmatch(p.Reason)
			if p.Object != "file/f.yaml" || m == nil {
				t.Fatalf("problem %+v does not name the file and a line", p)
			}
			detail := p.Reason[len(m[0]):]
			if detail == redactedDetail {
				continue
			}
			for _, v := range fuzzSecretValues(docAt(docs, m[1])) {
				if strings.Contains(detail, v) {
					t.Fatalf("problem %q quotes the secret value %q", p.Reason, v)
				}
			}
		}
	})
}

var fuzzLine = regexp.MustCompile(`^line (\d+): `)

// docAt returns the text of the document holding line (decimal text).
func docAt(docs []manifestDoc, line string) []byte {
	n, _ := strconv.Atoi(line)
	var text []byte
	for _, d := range docs {
		if d.start <= n {
			text = d.text
		}
	}
	return text
}

// fuzzSecretValues returns the data and stringData values of a Secret
// document, or of the Secrets of a List, as a lenient decode finds them.
func fuzzSecretValues(doc []byte) []string {
	var head struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	_ = yaml.Unmarshal(doc, &head)
	raws := head.Items
	if head.Kind == "Secret" {
		raws = append(raws, doc)
	}
	var out []string
	for _, raw := range raws {
		var s corev1.Secret
		_ = yaml.Unmarshal(raw, &s) // what decodes before an error counts
		if s.Kind != "Secret" {
			continue
		}
		for _, v := range s.StringData {
			out = append(out, v)
		}
		for _, v := range s.Data {
			out = append(out, string(v))
		}
	}
	return slices.DeleteFunc(out, func(v string) bool { return v == "" })
}
