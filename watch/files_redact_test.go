package watch

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// manifestPassword is the secret the malformed Secrets below hold.
const manifestPassword = "hunter2-S3cr3t"

func TestLoadSecretRedaction(t *testing.T) {
	const head = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"
	withheldYAML := "invalid YAML: cannot convert to JSON (" + secretWithheld + ")"
	tests := []struct {
		name     string
		doc      string
		password string // manifestPassword unless set
		want     []string
	}{
		{name: "data-not-base64", doc: head + "data: {pw: " + manifestPassword + "}\n",
			want: []string{`line 1: Secret "s": data is not valid base64 (` + secretWithheld + ")"}},
		{name: "string-data-value-is-a-list", doc: head + "stringData: {pw: [" + manifestPassword + "]}\n",
			want: []string{`line 1: Secret "s": does not decode as a v1 Secret (` + secretWithheld + ")"}},
		{name: "string-data-is-a-string", doc: head + "stringData: " + manifestPassword + "\n",
			want: []string{`line 1: Secret "s": does not decode as a v1 Secret (` + secretWithheld + ")"}},
		{name: "string-data-value-is-a-map", doc: head + "stringData:\n  pw: {x: " + manifestPassword + "}\n",
			want: []string{`line 1: Secret "s": does not decode as a v1 Secret (` + secretWithheld + ")"}},
		{name: "yaml-syntax-error", doc: head + "stringData:\n  pw: [" + manifestPassword + "\n",
			want: []string{"line 5: invalid YAML: did not find expected ',' or ']'"}},
		{name: "unknown-anchor", doc: head + "stringData: {pw: *" + manifestPassword + "}\n",
			want: []string{"line 1: " + withheldYAML}},
		{name: "unresolvable-tag", doc: head + "stringData: {pw: !!int " + manifestPassword + "}\n",
			want: []string{"line 1: " + withheldYAML}},
		{name: "complex-key", doc: head + "stringData: {? [" + manifestPassword + "]: x}\n",
			want: []string{"line 1: " + withheldYAML}},
		{name: "infinite-number", doc: head + "stringData: {pw: .inf}\n", password: ".inf",
			want: []string{"line 1: " + withheldYAML}},
		{name: "value-in-our-own-message", doc: "apiVersion: v1\nkind: Secret\nstringData: {pw: missing}\n", password: "missing",
			want: []string{"line 1: " + redactedDetail}},
		{name: "list-item", doc: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n" +
			"  metadata: {name: s}\n  data: {pw: " + manifestPassword + "}\n",
			want: []string{`line 1: item 1: Secret "s": data is not valid base64 (` + secretWithheld + ")"}},
		{name: "duplicate-with-name-equal-to-a-value", password: "s",
			doc:  head + "stringData: {pw: s}\n---\n" + head + "stringData: {pw: s}\n",
			want: []string{"line 6: " + redactedDetail}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pw := tt.password
			if pw == "" {
				pw = manifestPassword
			}
			dir := t.TempDir()
			writeManifests(t, dir, map[string]string{"s.yaml": tt.doc})
			_, probs := LoadDir(dir)
			var got []string
			for _, p := range probs {
				got = append(got, p.Reason)
				for _, leak := range []string{pw, base64.StdEncoding.EncodeToString([]byte(pw))} {
					if strings.Contains(p.Reason, leak) && !strings.HasSuffix(p.Reason, redactedDetail) {
						t.Errorf("problem %q quotes the secret %q", p.Reason, leak)
					}
				}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
		})
	}
}

func TestLoadSecretValues(t *testing.T) {
	tree, err := parseManifestTree([]byte("apiVersion: v1\nkind: List\nitems:\n" +
		"- {kind: Secret, metadata: {name: not-a-secret}, data: {a: aHVudGVyMg==}, stringData: {b: x, c: 12, d: yes, e: [z]}}\n" +
		"- {KIND: Secret, STRINGDATA: {f: upper-case-key}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := manifestSecretValues(tree)
	for _, want := range []string{"aHVudGVyMg==", "hunter2", "x", "12", "true", "z", "upper-case-key",
		"a", "b", "c", "d", "e", "f"} { // data keys too: a password may be typed as a key
		if !slices.Contains(got, want) {
			t.Errorf("secret values %q lack %q", got, want)
		}
	}
	if slices.Contains(got, "not-a-secret") {
		t.Errorf("secret values %q hold a name", got)
	}
}

// TestSecretUnknownField attacks the directory source as a measured attack
// did: a BGPPeer's password Secret with a misspelt field (stringDta) gave
// only "waiting for secret". The misspelt field is now a problem naming
// it (never its value), and the rest of the Secret is still read.
func TestSecretUnknownField(t *testing.T) {
	dir := t.TempDir()
	writeManifests(t, dir, map[string]string{"s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n" +
		"stringDta: {pw: " + manifestPassword + "}\ndata: {other: aHVudGVyMg==}\n"})
	objs, probs := LoadDir(dir)
	want := []string{`line 1: Secret "s": unknown field "stringDta" (a Secret has apiVersion, kind, metadata, data, ` +
		`stringData, type, immutable); its data is not read`}
	var got []string
	for _, p := range probs {
		got = append(got, p.Reason)
		if strings.Contains(p.Reason, manifestPassword) {
			t.Errorf("problem %q quotes the secret", p.Reason)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
	if len(objs.Secrets) != 1 || len(objs.Secrets[0].Data) != 1 || objs.Secrets[0].Data["other"].Reveal() != "hunter2" {
		t.Errorf("secrets %v: want s with its data key other", objs.Secrets)
	}
}
