package watch

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Problems about manifests must never quote a Secret's data. Three guards
// keep it out:
//
//   - A Secret's decode error is replaced by the kind of mistake
//     (decodeManifestSecret).
//   - A document that is not valid YAML is reported with go-yaml's syntax
//     message only: those are built from constant strings. go-yaml's other
//     messages (unknown anchors, tags that do not resolve, complex keys) and
//     the YAML-to-JSON conversion's quote the document, and are withheld.
//   - Every problem about a document that parsed is checked against every
//     value under a data or stringData key in it, and withheld on any
//     match.

// secretWithheld is said in place of a detail that could quote secret data.
const secretWithheld = "details withheld: the document may hold secret data"

// redactedDetail replaces a problem's detail that contains a secret value.
const redactedDetail = "invalid document holding secret data (details withheld)"

// redactSecrets returns detail, or redactedDetail when it contains any secret.
func redactSecrets(detail string, secrets []string) string {
	for _, s := range secrets {
		if s != "" && strings.Contains(detail, s) {
			return redactedDetail
		}
	}
	return detail
}

var yamlSyntax = regexp.MustCompile(`^yaml: (?:line (\d+): )?([^\n]*)$`)

// yamlEchoes mark the go-yaml messages that quote the document.
var yamlEchoes = []string{"anchor", "invalid map key", "cannot decode", "`"}

// yamlSyntaxProblem turns a failure to parse a document into the line (within
// the document; 0 when unknown) and a detail that never quotes it.
func yamlSyntaxProblem(err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	m := yamlSyntax.FindStringSubmatch(msg)
	if m == nil {
		return 0, "invalid YAML: cannot convert to JSON (" + secretWithheld + ")"
	}
	for _, e := range yamlEchoes {
		if strings.Contains(m[2], e) {
			return 0, "invalid YAML: cannot convert to JSON (" + secretWithheld + ")"
		}
	}
	line, _ := strconv.Atoi(m[1])
	if line > 0 && yamlParserProblems[m[2]] {
		line++
	}
	return line, "invalid YAML: " + m[2]
}

// yamlParserProblems are go-yaml v2's parser (not scanner) problems, which
// it reports with a 0-based line: the line before the one at fault.
var yamlParserProblems = map[string]bool{
	"did not find expected ',' or ']'": true, "did not find expected ',' or '}'": true,
	"did not find expected '-' indicator": true, "did not find expected <document start>": true,
	"did not find expected <stream-start>": true, "did not find expected key": true,
	"did not find expected node content": true, "found duplicate %TAG directive": true,
	"found duplicate %YAML directive": true, "found incompatible YAML document": true,
	"found undefined tag handle": true,
}

// manifestSecretValues returns every value under a data or stringData key
// anywhere in tree, the keys of those maps, and the base64 decoding of
// data's values, as text. It
// looks at every such key whatever the kind and the key's case: the typed
// decode matches field names case-insensitively, and a value kept out of a
// problem that was not secret costs only detail.
func manifestSecretValues(tree any) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				switch {
				case strings.EqualFold(k, "stringData"):
					out = appendSecretLeaves(appendDataKeys(out, c), c, false)
				case strings.EqualFold(k, "data"):
					out = appendSecretLeaves(appendDataKeys(out, c), c, true)
				default:
					walk(c)
				}
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(tree)
	slices.Sort(out) // aliases repeat values
	return slices.Compact(out)
}

// appendDataKeys appends the keys of a data or stringData map: a key is as
// secret as a value (a password may be typed as a key, `{"k PW": ""}`).
func appendDataKeys(out []string, v any) []string {
	if m, ok := v.(map[string]any); ok {
		for k := range m {
			out = append(out, k)
		}
	}
	return out
}

// appendSecretLeaves appends the text of every scalar in v, and, when decode is
// set, the base64 decoding of each string that has one.
func appendSecretLeaves(out []string, v any, decode bool) []string {
	switch v := v.(type) {
	case map[string]any:
		for _, c := range v {
			out = appendSecretLeaves(out, c, decode)
		}
	case []any:
		for _, c := range v {
			out = appendSecretLeaves(out, c, decode)
		}
	case string:
		out = append(out, v)
		if b, err := base64.StdEncoding.DecodeString(v); decode && err == nil {
			out = append(out, string(b))
		}
	case json.Number:
		out = append(out, v.String())
	case bool:
		out = append(out, strconv.FormatBool(v))
	}
	return out
}
