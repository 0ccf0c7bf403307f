package deploy

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	calicov3 "github.com/projectcalico/api/pkg/apis/projectcalico/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	serjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const (
	// agentNamespace is where the agent runs and reads Secrets
	// (../../shared/SEMANTICS.md §1, state.DefaultNamespace).
	agentNamespace = "calico-vpp-dataplane"
	serviceAccount = "peeragent"
	// agentCommand is the path of the agent's main package, from deploy/.
	agentCommand = "../cmd/peeragent"
)

var (
	crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	// calicoCRDGroup is Calico's CRD storage group: the same objects, and the
	// same Go types, as projectcalico.org/v3.
	calicoCRDGroup = schema.GroupVersion{Group: "crd.projectcalico.org", Version: "v1"}
)

// schemeAdders build the scheme every manifest is decoded with.
// deploy_apiextensions_test.go (build tag apiextensions) adds
// apiextensions.k8s.io/v1 to it.
var schemeAdders = []func(*runtime.Scheme) error{
	clientgoscheme.AddToScheme, calicov3.AddToScheme, addCalicoCRDGroup,
}

// crdValidators check the CRDs that the scheme decoded (none without
// apiextensions in the scheme).
var crdValidators []func(runtime.Object) error

func addCalicoCRDGroup(s *runtime.Scheme) error {
	s.AddKnownTypes(calicoCRDGroup,
		&calicov3.BGPPeer{}, &calicov3.BGPPeerList{},
		&calicov3.BGPConfiguration{}, &calicov3.BGPConfigurationList{},
		&calicov3.BGPFilter{}, &calicov3.BGPFilterList{})
	return nil
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range schemeAdders {
		if err := add(s); err != nil {
			t.Fatalf("scheme: %v", err)
		}
	}
	return s
}

// crd is the part of apiextensions.k8s.io/v1 CustomResourceDefinition that
// the CRDs of crds/ use; decoded strictly, a field outside it is an error
// (extend it when a CRD needs more). It does not depend on
// k8s.io/apiextensions-apiserver, which go.mod may lack.
type crd struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	} `json:"metadata"`
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind       string   `json:"kind"`
			ListKind   string   `json:"listKind"`
			Plural     string   `json:"plural"`
			Singular   string   `json:"singular"`
			ShortNames []string `json:"shortNames,omitempty"`
			Categories []string `json:"categories,omitempty"`
		} `json:"names"`
		Scope                 string       `json:"scope"`
		PreserveUnknownFields *bool        `json:"preserveUnknownFields,omitempty"`
		Versions              []crdVersion `json:"versions"`
	} `json:"spec"`
}

type crdVersion struct {
	Name       string `json:"name"`
	Served     bool   `json:"served"`
	Storage    bool   `json:"storage"`
	Deprecated bool   `json:"deprecated,omitempty"`
	Schema     *struct {
		OpenAPIV3Schema *jsonSchema `json:"openAPIV3Schema"`
	} `json:"schema"`
}

type jsonSchema struct {
	Description           string                `json:"description,omitempty"`
	Type                  string                `json:"type,omitempty"`
	Format                string                `json:"format,omitempty"`
	Properties            map[string]jsonSchema `json:"properties,omitempty"`
	Items                 *jsonSchema           `json:"items,omitempty"`
	Required              []string              `json:"required,omitempty"`
	Enum                  []json.RawMessage     `json:"enum,omitempty"`
	Default               json.RawMessage       `json:"default,omitempty"`
	Pattern               string                `json:"pattern,omitempty"`
	Minimum               *float64              `json:"minimum,omitempty"`
	Maximum               *float64              `json:"maximum,omitempty"`
	MaxLength             *int64                `json:"maxLength,omitempty"`
	MapType               string                `json:"x-kubernetes-map-type,omitempty"`
	ListType              string                `json:"x-kubernetes-list-type,omitempty"`
	PreserveUnknownFields *bool                 `json:"x-kubernetes-preserve-unknown-fields,omitempty"`
}

// manifest is one YAML document of deploy/.
type manifest struct {
	file  string // relative to deploy/
	index int    // of the document in its file, from 0
	gvk   schema.GroupVersionKind
	obj   runtime.Object // decoded by the scheme; nil for a CRD it does not know
	crd   *crd           // CRDs only
}

func (m manifest) String() string { return fmt.Sprintf("%s#%d (%s)", m.file, m.index, m.gvk.Kind) }

// manifestFiles lists the YAML files under deploy/, except kustomization.yaml.
func manifestFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		ext := filepath.Ext(path)
		if !d.IsDir() && (ext == ".yaml" || ext == ".yml") && path != "kustomization.yaml" {
			files = append(files, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no manifests found")
	}
	return files
}

// splitDocuments splits multi-document YAML, dropping documents that hold
// only comments.
func splitDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		if s := string(bytes.TrimSpace(j)); s != "null" && s != "" {
			docs = append(docs, doc)
		}
	}
}

// decode decodes one document strictly: unknown and duplicate fields are
// errors, and so is a kind the scheme does not know (but for CRDs, which
// are also decoded into crd).
func decode(s *runtime.Scheme, doc []byte) (manifest, error) {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return manifest{}, err
	}
	gvk, err := serjson.DefaultMetaFactory.Interpret(j)
	if err != nil {
		return manifest{}, err
	}
	m := manifest{gvk: *gvk}
	if *gvk == crdGVK {
		m.crd = &crd{}
		if err := strictUnmarshal(j, m.crd); err != nil {
			return manifest{}, err
		}
		if !s.Recognizes(*gvk) {
			return m, nil
		}
	}
	codec := serjson.NewSerializerWithOptions(serjson.DefaultMetaFactory, s, s, serjson.SerializerOptions{Strict: true})
	obj, _, err := codec.Decode(j, nil, nil)
	if err != nil {
		return manifest{}, err
	}
	m.obj = obj
	return m, nil
}

func strictUnmarshal(j []byte, into any) error {
	strict, err := kjson.UnmarshalStrict(j, into, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// loadManifests decodes every document of every manifest of deploy/.
func loadManifests(t *testing.T) []manifest {
	t.Helper()
	s := newScheme(t)
	var all []manifest
	for _, file := range manifestFiles(t) {
		ms, err := loadFile(s, file)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ms...)
	}
	return all
}

func loadFile(s *runtime.Scheme, file string) ([]manifest, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	docs, err := splitDocuments(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s: no documents", file)
	}
	var ms []manifest
	for i, doc := range docs {
		m, err := decode(s, doc)
		if err != nil {
			return nil, fmt.Errorf("%s#%d: %w", file, i, err)
		}
		m.file, m.index = file, i
		ms = append(ms, m)
	}
	return ms, nil
}

// only returns the single decoded object of type T, failing otherwise.
func only[T runtime.Object](t *testing.T, ms []manifest) T {
	t.Helper()
	objs := all[T](ms)
	if len(objs) != 1 {
		var zero T
		t.Fatalf("want exactly one %T, have %d", zero, len(objs))
	}
	return objs[0]
}

func all[T runtime.Object](ms []manifest) []T {
	var objs []T
	for _, m := range ms {
		if o, ok := m.obj.(T); ok {
			objs = append(objs, o)
		}
	}
	return objs
}

func TestManifestsDecodeStrictly(t *testing.T) {
	s := newScheme(t)
	for _, file := range manifestFiles(t) {
		t.Run(file, func(t *testing.T) {
			ms, err := loadFile(s, file)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				if m.obj == nil && m.crd == nil {
					t.Errorf("%s: not decoded", m)
				}
				if m.crd != nil {
					for _, validate := range crdValidators {
						if m.obj == nil {
							t.Fatalf("%s: the scheme does not know CRDs", m)
						}
						if err := validate(m.obj); err != nil {
							t.Errorf("%s: %v", m, err)
						}
					}
				}
			}
		})
	}
}

// TestDecoderIsStrict keeps the decoder honest: mistakes it must reject.
func TestDecoderIsStrict(t *testing.T) {
	s := newScheme(t)
	cases := []struct {
		name string
		doc  string
	}{
		{"unknown-field-in-daemonset", `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: x}
spec: {hostNetwrok: true}`},
		{"duplicate-field", `
apiVersion: v1
kind: ServiceAccount
metadata: {name: x}
metadata: {name: y}`},
		{"unknown-field-in-bgppeer-spec", `
apiVersion: crd.projectcalico.org/v1
kind: BGPPeer
metadata: {name: x}
spec: {peerIp: 192.0.2.1}`},
		{"unknown-field-in-v3-bgpfilter-rule", `
apiVersion: projectcalico.org/v3
kind: BGPFilter
metadata: {name: x}
spec: {exportV4: [{action: Accept, cidrs: 10.0.0.0/8}]}`},
		{"unknown-field-in-crd-schema", `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: xs.example.com}
spec:
  group: example.com
  names: {kind: X, listKind: XList, plural: xs, singular: x}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, propertys: {}}}`},
		{"unknown-kind", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: x}`},
		{"wrong-type", `
apiVersion: crd.projectcalico.org/v1
kind: BGPConfiguration
metadata: {name: default}
spec: {nodeToNodeMeshEnabled: "yes"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if m, err := decode(s, []byte(c.doc)); err == nil {
				t.Fatalf("decoded %v without error", m.gvk)
			}
		})
	}
}

func TestKustomization(t *testing.T) {
	data, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := strictUnmarshal(j, &k); err != nil {
		t.Fatal(err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("kustomization.yaml is %s %s", k.APIVersion, k.Kind)
	}
	for _, r := range k.Resources {
		if _, err := os.Stat(r); err != nil {
			t.Errorf("resource %s: %v", r, err)
		}
	}
	// Every top-level manifest is installed, but the examples and the CRDs
	// (Calico installs its own).
	for _, f := range manifestFiles(t) {
		example := strings.HasPrefix(f, "example-")
		listed := slices.Contains(k.Resources, f)
		switch {
		case strings.Contains(f, "/") && listed:
			t.Errorf("%s is listed: the CRDs are Calico's to install", f)
		case strings.Contains(f, "/"):
		case example && listed:
			t.Errorf("%s is listed: an example is not installed by default", f)
		case !example && !listed:
			t.Errorf("%s is not listed in kustomization.yaml", f)
		}
	}
}

func TestNamespacedObjectsAreInTheAgentNamespace(t *testing.T) {
	ms := loadManifests(t)
	ns := only[*corev1.Namespace](t, ms)
	if ns.Name != agentNamespace {
		t.Errorf("Namespace %q, want %q", ns.Name, agentNamespace)
	}
	namespaced := map[string]bool{"ServiceAccount": true, "Role": true, "RoleBinding": true, "DaemonSet": true, "Secret": true}
	for _, m := range ms {
		acc, ok := m.obj.(interface{ GetNamespace() string })
		if !ok {
			continue
		}
		switch got := acc.GetNamespace(); {
		case namespaced[m.gvk.Kind] && got != agentNamespace:
			t.Errorf("%s: namespace %q, want %q", m, got, agentNamespace)
		case !namespaced[m.gvk.Kind] && got != "":
			t.Errorf("%s: cluster-scoped, has namespace %q", m, got)
		}
	}
	sa := only[*corev1.ServiceAccount](t, ms)
	if sa.Name != serviceAccount {
		t.Errorf("ServiceAccount %q, want %q", sa.Name, serviceAccount)
	}
}

// access is a request of the agent's ServiceAccount; namespace "" is a
// cluster-wide request (a list or watch across namespaces, or a
// cluster-scoped resource).
type access struct {
	verb, group, resource, namespace string
}

// allowed evaluates the RBAC objects of deploy/ the way the API server's
// RBAC authorizer does, for the agent's ServiceAccount.
func allowed(ms []manifest, a access) bool {
	roles := map[string][]rbacv1.PolicyRule{} // "ClusterRole/name" or "Role/ns/name"
	for _, r := range all[*rbacv1.ClusterRole](ms) {
		roles["ClusterRole/"+r.Name] = r.Rules
	}
	for _, r := range all[*rbacv1.Role](ms) {
		roles["Role/"+r.Namespace+"/"+r.Name] = r.Rules
	}
	ruleAllows := func(key string) bool {
		return slices.ContainsFunc(roles[key], func(r rbacv1.PolicyRule) bool {
			return matches(r.Verbs, a.verb) && matches(r.APIGroups, a.group) &&
				matches(r.Resources, a.resource) && len(r.ResourceNames) == 0
		})
	}
	for _, b := range all[*rbacv1.ClusterRoleBinding](ms) {
		if bindsAgent(b.Subjects) && b.RoleRef.Kind == "ClusterRole" && ruleAllows("ClusterRole/"+b.RoleRef.Name) {
			return true
		}
	}
	for _, b := range all[*rbacv1.RoleBinding](ms) {
		if !bindsAgent(b.Subjects) || a.namespace != b.Namespace {
			continue
		}
		key := "ClusterRole/" + b.RoleRef.Name
		if b.RoleRef.Kind == "Role" {
			key = "Role/" + b.Namespace + "/" + b.RoleRef.Name
		}
		if ruleAllows(key) {
			return true
		}
	}
	return false
}

func matches(list []string, v string) bool {
	return slices.Contains(list, v) || slices.Contains(list, "*")
}

func bindsAgent(subjects []rbacv1.Subject) bool {
	return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
		return s.Kind == "ServiceAccount" && s.Name == serviceAccount && s.Namespace == agentNamespace
	})
}

var readVerbs = []string{"get", "list", "watch"}

func TestRBACAccess(t *testing.T) {
	ms := loadManifests(t)
	type accessCase struct {
		name string
		req  access
		want bool
	}
	var cases []accessCase
	// Everything the agent reads, in every read verb.
	for _, group := range []string{"crd.projectcalico.org", "projectcalico.org"} {
		for _, res := range []string{"bgppeers", "bgpconfigurations", "bgpfilters"} {
			for _, verb := range readVerbs {
				cases = append(cases, accessCase{
					kebab(verb, res, group), access{verb, group, res, ""}, true})
			}
		}
	}
	for _, verb := range readVerbs {
		cases = append(cases,
			accessCase{kebab(verb, "nodes"), access{verb, "", "nodes", ""}, true},
			accessCase{kebab(verb, "secrets-in-agent-namespace"), access{verb, "", "secrets", agentNamespace}, true})
	}
	cases = append(cases, []accessCase{
		{"no-create-bgppeers", access{"create", "crd.projectcalico.org", "bgppeers", ""}, false},
		{"no-update-bgppeers-v3", access{"update", "projectcalico.org", "bgppeers", ""}, false},
		{"no-delete-bgpfilters", access{"delete", "crd.projectcalico.org", "bgpfilters", ""}, false},
		{"no-patch-bgpconfigurations", access{"patch", "crd.projectcalico.org", "bgpconfigurations", ""}, false},
		{"no-update-bgppeers-status", access{"update", "crd.projectcalico.org", "bgppeers/status", ""}, false},
		{"no-other-calico-objects", access{"list", "crd.projectcalico.org", "ippools", ""}, false},
		{"no-patch-nodes", access{"patch", "", "nodes", ""}, false},
		{"no-update-nodes-status", access{"update", "", "nodes/status", ""}, false},
		{"no-secrets-cluster-wide", access{"list", "", "secrets", ""}, false},
		{"no-secrets-in-kube-system", access{"get", "", "secrets", "kube-system"}, false},
		{"no-secrets-in-default", access{"watch", "", "secrets", "default"}, false},
		{"no-create-secrets-in-agent-namespace", access{"create", "", "secrets", agentNamespace}, false},
		{"no-update-secrets-in-agent-namespace", access{"update", "", "secrets", agentNamespace}, false},
		{"no-configmaps-in-agent-namespace", access{"get", "", "configmaps", agentNamespace}, false},
		{"no-pods", access{"list", "", "pods", ""}, false},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := allowed(ms, c.req); got != c.want {
				t.Errorf("%+v: allowed %v, want %v", c.req, got, c.want)
			}
		})
	}
}

func kebab(parts ...string) string {
	return strings.ReplaceAll(strings.Join(parts, "-"), ".", "-")
}

func TestRBACShape(t *testing.T) {
	ms := loadManifests(t)
	cases := []struct {
		name  string
		check func() error
	}{
		{"cluster-role-grants-only-get-list-watch", func() error {
			var errs []error
			for _, r := range all[*rbacv1.ClusterRole](ms) {
				errs = append(errs, readOnly("ClusterRole "+r.Name, r.Rules))
				for _, rule := range r.Rules {
					if slices.Contains(rule.Resources, "secrets") {
						errs = append(errs, fmt.Errorf("ClusterRole %s grants secrets", r.Name))
					}
				}
			}
			return errors.Join(errs...)
		}},
		{"role-is-namespaced-and-limited-to-secrets", func() error {
			var errs []error
			roles := all[*rbacv1.Role](ms)
			if len(roles) != 1 {
				return fmt.Errorf("%d Roles, want 1", len(roles))
			}
			for _, r := range roles {
				if r.Namespace != agentNamespace {
					errs = append(errs, fmt.Errorf("Role %s in namespace %q", r.Name, r.Namespace))
				}
				errs = append(errs, readOnly("Role "+r.Name, r.Rules))
				for _, rule := range r.Rules {
					if !slices.Equal(rule.APIGroups, []string{""}) || !slices.Equal(rule.Resources, []string{"secrets"}) {
						errs = append(errs, fmt.Errorf("Role %s: rule for %v %v, want core secrets only", r.Name, rule.APIGroups, rule.Resources))
					}
				}
			}
			return errors.Join(errs...)
		}},
		{"bindings-bind-the-service-account-to-existing-roles", func() error {
			var errs []error
			crbs, rbs := all[*rbacv1.ClusterRoleBinding](ms), all[*rbacv1.RoleBinding](ms)
			if len(crbs) != 1 || len(rbs) != 1 {
				return fmt.Errorf("%d ClusterRoleBindings and %d RoleBindings, want 1 and 1", len(crbs), len(rbs))
			}
			for _, b := range crbs {
				if !bindsAgent(b.Subjects) || len(b.Subjects) != 1 {
					errs = append(errs, fmt.Errorf("ClusterRoleBinding %s subjects %v", b.Name, b.Subjects))
				}
				if !slices.ContainsFunc(all[*rbacv1.ClusterRole](ms), func(r *rbacv1.ClusterRole) bool {
					return b.RoleRef == rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: r.Name}
				}) {
					errs = append(errs, fmt.Errorf("ClusterRoleBinding %s: no ClusterRole %+v", b.Name, b.RoleRef))
				}
			}
			for _, b := range rbs {
				if !bindsAgent(b.Subjects) || len(b.Subjects) != 1 {
					errs = append(errs, fmt.Errorf("RoleBinding %s subjects %v", b.Name, b.Subjects))
				}
				if !slices.ContainsFunc(all[*rbacv1.Role](ms), func(r *rbacv1.Role) bool {
					return r.Namespace == b.Namespace && b.RoleRef == rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name}
				}) {
					errs = append(errs, fmt.Errorf("RoleBinding %s: no Role %+v in %s", b.Name, b.RoleRef, b.Namespace))
				}
			}
			return errors.Join(errs...)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// readOnly reports rules that grant more than get, list and watch, or use
// wildcards or non-resource URLs.
func readOnly(what string, rules []rbacv1.PolicyRule) error {
	var errs []error
	for _, r := range rules {
		for _, v := range r.Verbs {
			if !slices.Contains(readVerbs, v) {
				errs = append(errs, fmt.Errorf("%s grants %q", what, v))
			}
		}
		if slices.Contains(r.APIGroups, "*") || slices.Contains(r.Resources, "*") || len(r.NonResourceURLs) > 0 {
			errs = append(errs, fmt.Errorf("%s: wildcard or non-resource rule %+v", what, r))
		}
	}
	return errors.Join(errs...)
}

// runFlags returns the flags of `peeragent run`, read from the source of
// cmd/peeragent: the flags defined on the FlagSet named "run", including
// those defined by the functions it is passed to (optionFlags). Reading the
// source needs no build of the agent.
func runFlags(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(agentCommand, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	funcs := map[string]*ast.FuncDecl{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Body != nil {
				funcs[fn.Name.Name] = fn
			}
		}
	}
	flags := map[string]bool{}
	visited := map[string]bool{}
	var collect func(fn *ast.FuncDecl, fsVar string)
	collect = func(fn *ast.FuncDecl, fsVar string) {
		if visited[fn.Name.Name+"/"+fsVar] {
			return
		}
		visited[fn.Name.Name+"/"+fsVar] = true
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch fun := call.Fun.(type) {
			case *ast.SelectorExpr: // fs.StringVar(&v, "name", ...), fs.Int("name", ...)
				if x, ok := fun.X.(*ast.Ident); ok && x.Name == fsVar {
					i := 0
					if strings.HasSuffix(fun.Sel.Name, "Var") {
						i = 1
					}
					if i < len(call.Args) {
						if lit, ok := call.Args[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							if name, err := strconv.Unquote(lit.Value); err == nil {
								flags[name] = true
							}
						}
					}
				}
			case *ast.Ident: // helper(fs): follow into the helper
				callee := funcs[fun.Name]
				if callee == nil {
					break
				}
				params := paramNames(callee)
				for i, arg := range call.Args {
					if id, ok := arg.(*ast.Ident); ok && id.Name == fsVar && i < len(params) {
						collect(callee, params[i])
					}
				}
			}
			return true
		})
	}
	for _, fn := range funcs {
		if v := runFlagSetVar(fn); v != "" {
			collect(fn, v)
		}
	}
	// The parse must have found the flags this test relies on; if not,
	// cmd/peeragent changed shape and this function must follow it.
	for _, want := range []string{"node", "http-addr", "secrets-namespace"} {
		if !flags[want] {
			t.Fatalf("found no --%s among the run flags of %s (found %v): update runFlags", want, agentCommand, flags)
		}
	}
	return flags
}

// runFlagSetVar returns the variable that fn assigns flag.NewFlagSet("run", ...) to.
func runFlagSetVar(fn *ast.FuncDecl) string {
	var name string
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
			return true
		}
		call, ok := as.Rhs[0].(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "NewFlagSet" {
			return true
		}
		if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Value == `"run"` {
			if id, ok := as.Lhs[0].(*ast.Ident); ok {
				name = id.Name
			}
		}
		return true
	})
	return name
}

func paramNames(fn *ast.FuncDecl) []string {
	var names []string
	for _, f := range fn.Type.Params.List {
		if len(f.Names) == 0 {
			names = append(names, "_")
		}
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
	}
	return names
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func TestDaemonSet(t *testing.T) {
	ms := loadManifests(t)
	ds := only[*appsv1.DaemonSet](t, ms)
	pod := ds.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	flags := runFlags(t)
	// args maps the flags given to their values; argErrs are args that are
	// not --flag=value.
	args := map[string]string{}
	var argErrs []error
	for _, a := range c.Args[min(1, len(c.Args)):] {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok {
			argErrs = append(argErrs, fmt.Errorf("arg %q: want --flag=value", a))
			continue
		}
		args[name] = value
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	cases := []struct {
		name  string
		check func() error
	}{
		{"runs-peeragent-run", func() error {
			if !slices.Equal(c.Command, []string{"peeragent"}) || len(c.Args) == 0 || c.Args[0] != "run" {
				return fmt.Errorf("command %q args %q, want peeragent run ...", c.Command, c.Args)
			}
			return nil
		}},
		{"flags-exist-in-peeragent-run", func() error {
			errs := argErrs
			for name := range args {
				if !flags[name] {
					errs = append(errs, fmt.Errorf("--%s: peeragent run has no such flag", name))
				}
			}
			return errors.Join(errs...)
		}},
		{"flag-values", func() error {
			var errs []error
			for name, want := range map[string]string{
				"node":              "$(NODENAME)",
				"secrets-namespace": "$(NAMESPACE)",
				"http-addr":         "127.0.0.1:9179",
			} {
				if got := args[name]; got != want {
					errs = append(errs, fmt.Errorf("--%s=%q, want %q", name, got, want))
				}
			}
			return errors.Join(errs...)
		}},
		{"env-from-downward-api", func() error {
			var errs []error
			for name, path := range map[string]string{"NODENAME": "spec.nodeName", "NAMESPACE": "metadata.namespace"} {
				e := env[name]
				if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != path {
					errs = append(errs, fmt.Errorf("env %s: %+v, want fieldRef %s", name, e, path))
				}
			}
			for _, a := range c.Args {
				for _, m := range envRef.FindAllStringSubmatch(a, -1) {
					if _, ok := env[m[1]]; !ok {
						errs = append(errs, fmt.Errorf("arg %q refers to undefined env %s", a, m[1]))
					}
				}
			}
			return errors.Join(errs...)
		}},
		{"uses-the-service-account", func() error {
			if pod.ServiceAccountName != serviceAccount {
				return fmt.Errorf("serviceAccountName %q, want %q", pod.ServiceAccountName, serviceAccount)
			}
			if pod.AutomountServiceAccountToken != nil && !*pod.AutomountServiceAccountToken {
				return errors.New("the service account token is not mounted")
			}
			return nil
		}},
		{"host-network", func() error {
			if !pod.HostNetwork || pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
				return fmt.Errorf("hostNetwork %v dnsPolicy %q", pod.HostNetwork, pod.DNSPolicy)
			}
			return nil
		}},
		{"probes-on-loopback", func() error {
			var errs []error
			_, port, _ := strings.Cut(args["http-addr"], ":")
			for path, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
				if p == nil || p.HTTPGet == nil {
					errs = append(errs, fmt.Errorf("no httpGet probe on %s", path))
					continue
				}
				g := p.HTTPGet
				if g.Host != "127.0.0.1" || g.Path != path || g.Port.String() != port {
					errs = append(errs, fmt.Errorf("probe %s: host %q path %q port %s, want 127.0.0.1 %s %s", path, g.Host, g.Path, g.Port.String(), path, port))
				}
			}
			return errors.Join(errs...)
		}},
		{"resource-requests", func() error {
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
				return fmt.Errorf("requests %v, want cpu and memory", c.Resources.Requests)
			}
			return nil
		}},
		{"minimal-security-context", func() error {
			sc := c.SecurityContext
			if sc == nil || sc.Capabilities == nil {
				return errors.New("no securityContext with capabilities")
			}
			var errs []error
			if !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
				errs = append(errs, fmt.Errorf("drops %v, want ALL", sc.Capabilities.Drop))
			}
			if !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_BIND_SERVICE"}) {
				errs = append(errs, fmt.Errorf("adds %v, want NET_BIND_SERVICE only", sc.Capabilities.Add))
			}
			if sc.Privileged != nil && *sc.Privileged {
				errs = append(errs, errors.New("privileged"))
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				errs = append(errs, errors.New("allowPrivilegeEscalation is not false"))
			}
			if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				errs = append(errs, errors.New("root filesystem is writable"))
			}
			return errors.Join(errs...)
		}},
		{"tolerates-every-taint", func() error {
			if !slices.ContainsFunc(pod.Tolerations, func(tol corev1.Toleration) bool {
				return tol.Key == "" && tol.Operator == corev1.TolerationOpExists && tol.Effect == ""
			}) {
				return fmt.Errorf("tolerations %+v, want one with operator Exists and no key or effect", pod.Tolerations)
			}
			return nil
		}},
		{"placeholder-image", func() error {
			if c.Image != "ghcr.io/peeragent/peeragent:latest" {
				return fmt.Errorf("image %q", c.Image)
			}
			return nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.check(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestExampleBGPPeer(t *testing.T) {
	ms := loadManifests(t)
	var peers []*calicov3.BGPPeer
	for _, m := range ms {
		if p, ok := m.obj.(*calicov3.BGPPeer); ok && strings.HasPrefix(m.file, "example-") {
			if m.gvk.GroupVersion() != calicoCRDGroup {
				t.Errorf("%s: %s, want %s", m, m.gvk.GroupVersion(), calicoCRDGroup)
			}
			peers = append(peers, p)
		}
	}
	if len(peers) != 1 {
		t.Fatalf("%d example BGPPeers, want 1", len(peers))
	}
	p := peers[0]
	if p.Spec.PeerIP == "" || p.Spec.ASNumber == 0 {
		t.Errorf("example peer: peerIP %q asNumber %d", p.Spec.PeerIP, p.Spec.ASNumber)
	}
	if p.Spec.Password == nil || p.Spec.Password.SecretKeyRef == nil {
		t.Fatal("example peer has no password.secretKeyRef")
	}
	ref := p.Spec.Password.SecretKeyRef
	found := false
	for _, s := range all[*corev1.Secret](ms) {
		if s.Name != ref.Name {
			continue
		}
		found = true
		if s.Namespace != agentNamespace {
			t.Errorf("Secret %s in %q, want %q (the agent reads no other)", s.Name, s.Namespace, agentNamespace)
		}
		_, inData := s.Data[ref.Key]
		_, inString := s.StringData[ref.Key]
		if !inData && !inString {
			t.Errorf("Secret %s has no key %q", s.Name, ref.Key)
		}
	}
	if !found {
		t.Errorf("no example Secret %q", ref.Name)
	}
}

var (
	validTypes     = []string{"object", "array", "string", "integer", "number", "boolean"}
	integerFormats = []string{"", "int32", "int64"}
)

func TestCRDs(t *testing.T) {
	ms := loadManifests(t)
	s := newScheme(t)
	crds := map[string]*crd{}
	for _, m := range ms {
		if m.crd != nil {
			crds[m.file] = m.crd
		}
	}
	cases := []struct {
		name, file, group, version, kind, plural string
	}{
		{"bgppeers-v1", "crds/crd.projectcalico.org_bgppeers.yaml", "crd.projectcalico.org", "v1", "BGPPeer", "bgppeers"},
		{"bgpconfigurations-v1", "crds/crd.projectcalico.org_bgpconfigurations.yaml", "crd.projectcalico.org", "v1", "BGPConfiguration", "bgpconfigurations"},
		{"bgpfilters-v1", "crds/crd.projectcalico.org_bgpfilters.yaml", "crd.projectcalico.org", "v1", "BGPFilter", "bgpfilters"},
		{"bgppeers-v3", "crds/v3/projectcalico.org_bgppeers.yaml", "projectcalico.org", "v3", "BGPPeer", "bgppeers"},
		{"bgpconfigurations-v3", "crds/v3/projectcalico.org_bgpconfigurations.yaml", "projectcalico.org", "v3", "BGPConfiguration", "bgpconfigurations"},
		{"bgpfilters-v3", "crds/v3/projectcalico.org_bgpfilters.yaml", "projectcalico.org", "v3", "BGPFilter", "bgpfilters"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := crds[c.file]
			if d == nil {
				t.Fatalf("no CRD in %s", c.file)
			}
			delete(crds, c.file)
			spec := d.Spec
			if d.Metadata.Name != c.plural+"."+c.group || spec.Group != c.group || spec.Scope != "Cluster" {
				t.Errorf("name %q group %q scope %q, want %s.%s %s Cluster", d.Metadata.Name, spec.Group, spec.Scope, c.plural, c.group, c.group)
			}
			n := spec.Names
			if n.Kind != c.kind || n.ListKind != c.kind+"List" || n.Plural != c.plural || n.Singular != strings.ToLower(c.kind) {
				t.Errorf("names %+v", n)
			}
			if spec.PreserveUnknownFields != nil && *spec.PreserveUnknownFields {
				t.Error("preserveUnknownFields is true")
			}
			if len(spec.Versions) != 1 {
				t.Fatalf("%d versions, want 1", len(spec.Versions))
			}
			v := spec.Versions[0]
			if v.Name != c.version || !v.Served || !v.Storage || v.Deprecated {
				t.Errorf("version %s served %v storage %v deprecated %v, want %s served and stored", v.Name, v.Served, v.Storage, v.Deprecated, c.version)
			}
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				t.Fatal("no openAPIV3Schema")
			}
			root := v.Schema.OpenAPIV3Schema
			for _, err := range checkRoot(root) {
				t.Error(err)
			}
			// The schema has exactly the fields of the Go type the agent
			// decodes this kind into: none missing (the API server would
			// prune it), none extra.
			gvk := schema.GroupVersionKind{Group: c.group, Version: c.version, Kind: c.kind}
			obj, err := s.New(gvk)
			if err != nil {
				t.Fatalf("scheme: %v", err)
			}
			specField := reflect.ValueOf(obj).Elem().FieldByName("Spec")
			if !specField.IsValid() {
				t.Fatalf("%T has no Spec", obj)
			}
			full := reflect.New(specField.Type())
			if err := fill(full.Elem()); err != nil {
				t.Fatal(err)
			}
			j, err := json.Marshal(full.Interface())
			if err != nil {
				t.Fatal(err)
			}
			var value any
			if err := json.Unmarshal(j, &value); err != nil {
				t.Fatal(err)
			}
			specSchema := root.Properties["spec"]
			for _, err := range matchSchema("spec", value, &specSchema) {
				t.Error(err)
			}
		})
	}
	t.Run("no-untested-crds", func(t *testing.T) {
		for file := range crds {
			t.Errorf("%s: no case in TestCRDs", file)
		}
	})
	t.Run("v1-and-v3-schemas-are-equal", func(t *testing.T) {
		for _, c := range cases {
			if c.version != "v1" {
				continue
			}
			v3 := loadCRD(t, s, "crds/v3/projectcalico.org_"+c.plural+".yaml")
			v1 := loadCRD(t, s, c.file)
			if !reflect.DeepEqual(v1.Spec.Names, v3.Spec.Names) || !reflect.DeepEqual(v1.Spec.Versions[0].Schema, v3.Spec.Versions[0].Schema) {
				t.Errorf("%s: the v1 and v3 CRDs differ in names or schema", c.plural)
			}
		}
	})
}

func loadCRD(t *testing.T, s *runtime.Scheme, file string) *crd {
	t.Helper()
	ms, err := loadFile(s, file)
	if err != nil || len(ms) != 1 || ms[0].crd == nil {
		t.Fatalf("%s: want one CRD (%v)", file, err)
	}
	return ms[0].crd
}

// checkRoot checks the top of a CRD schema, then the whole of it.
func checkRoot(root *jsonSchema) []error {
	var errs []error
	if root.Type != "object" {
		errs = append(errs, fmt.Errorf("root type %q, want object", root.Type))
	}
	for name, typ := range map[string]string{"apiVersion": "string", "kind": "string", "metadata": "object", "spec": "object"} {
		if p, ok := root.Properties[name]; !ok || p.Type != typ {
			errs = append(errs, fmt.Errorf("root property %s: %+v, want type %s", name, p, typ))
		}
	}
	if md := root.Properties["metadata"]; len(md.Properties) > 0 {
		errs = append(errs, errors.New("metadata has a schema: the API server validates it"))
	}
	return append(errs, checkSchema("", root)...)
}

// checkSchema checks the structural-schema rules these CRDs rely on: every
// node typed, arrays with items, properties only on objects, required
// properties that exist, enums and defaults of the node's type, patterns
// that compile, bounds on numbers only, and no
// x-kubernetes-preserve-unknown-fields (Calico's BGP CRDs have none).
func checkSchema(path string, s *jsonSchema) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("schema %s: %s", cmp.Or(path, "."), fmt.Sprintf(format, args...)))
	}
	if !slices.Contains(validTypes, s.Type) {
		fail("type %q", s.Type)
	}
	if s.PreserveUnknownFields != nil {
		fail("x-kubernetes-preserve-unknown-fields")
	}
	if s.Type != "object" && (len(s.Properties) > 0 || len(s.Required) > 0 || s.MapType != "") {
		fail("properties, required or map type on a %s", s.Type)
	}
	if (s.Type == "array") != (s.Items != nil) || (s.ListType != "" && s.Type != "array") {
		fail("items or list type on a %s", s.Type)
	}
	if s.MapType != "" && s.MapType != "atomic" && s.MapType != "granular" {
		fail("map type %q", s.MapType)
	}
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; !ok {
			fail("required %q is not a property", r)
		}
	}
	if s.Type == "integer" && !slices.Contains(integerFormats, s.Format) || s.Type != "integer" && s.Format != "" {
		fail("format %q on a %s", s.Format, s.Type)
	}
	if (s.Minimum != nil || s.Maximum != nil) && s.Type != "integer" && s.Type != "number" {
		fail("bounds on a %s", s.Type)
	}
	if s.Minimum != nil && s.Maximum != nil && *s.Minimum > *s.Maximum {
		fail("minimum %v > maximum %v", *s.Minimum, *s.Maximum)
	}
	if s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err != nil || s.Type != "string" {
			fail("pattern %q on a %s: %v", s.Pattern, s.Type, err)
		}
	}
	for _, e := range s.Enum {
		if err := valueOfType(e, s.Type); err != nil {
			fail("enum: %v", err)
		}
	}
	if s.Default != nil {
		if err := valueOfType(s.Default, s.Type); err != nil {
			fail("default: %v", err)
		}
		if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e json.RawMessage) bool { return bytes.Equal(e, s.Default) }) {
			fail("default %s not in enum", s.Default)
		}
	}
	for name, p := range s.Properties {
		errs = append(errs, checkSchema(path+"."+name, &p)...)
	}
	if s.Items != nil {
		errs = append(errs, checkSchema(path+"[]", s.Items)...)
	}
	return errs
}

func valueOfType(raw json.RawMessage, typ string) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	return jsonType(v, typ)
}

func jsonType(v any, typ string) error {
	ok := false
	switch x := v.(type) {
	case string:
		ok = typ == "string"
	case bool:
		ok = typ == "boolean"
	case float64:
		ok = typ == "number" || typ == "integer" && x == float64(int64(x))
	case map[string]any:
		ok = typ == "object"
	case []any:
		ok = typ == "array"
	}
	if !ok {
		return fmt.Errorf("%v (%T) is not a %s", v, v, typ)
	}
	return nil
}

// matchSchema compares a JSON value holding every field of a Go type with a
// schema: each field must be a property of the right type, and each
// property a field.
func matchSchema(path string, v any, s *jsonSchema) []error {
	if err := jsonType(v, s.Type); err != nil {
		return []error{fmt.Errorf("%s: %v", path, err)}
	}
	var errs []error
	switch x := v.(type) {
	case map[string]any:
		for name, fv := range x {
			p, ok := s.Properties[name]
			if !ok {
				errs = append(errs, fmt.Errorf("%s.%s: a field of the Go type, not in the schema (the API server would drop it)", path, name))
				continue
			}
			errs = append(errs, matchSchema(path+"."+name, fv, &p)...)
		}
		for name := range s.Properties {
			if _, ok := x[name]; !ok {
				errs = append(errs, fmt.Errorf("%s.%s: in the schema, not a field of the Go type", path, name))
			}
		}
	case []any:
		for _, e := range x {
			errs = append(errs, matchSchema(path+"[]", e, s.Items)...)
		}
	}
	return errs
}

// fill sets every field reachable from v to a non-zero value (one element
// per slice), so that its JSON shows every field.
func fill(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		return fill(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				if err := fill(v.Field(i)); err != nil {
					return err
				}
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		return fill(v.Index(0))
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	default:
		return fmt.Errorf("fill: unsupported %s", v.Type())
	}
	return nil
}
