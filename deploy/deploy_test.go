package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"

	calicov3 "github.com/projectcalico/api/pkg/apis/projectcalico/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	serjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const (
	// agentNamespace is the agent's own namespace, created by the
	// kustomization: the DaemonSet and its ServiceAccount.
	agentNamespace = "peeragent"
	// secretsNamespace is Calico/VPP's namespace, where the BGP password
	// Secrets are (docs/semantics.md §1, state.DefaultNamespace):
	// the agent's --secrets-namespace. deploy/ puts only the Secret Role and
	// RoleBinding there, never the Namespace itself.
	secretsNamespace = "calico-vpp-dataplane"
	serviceAccount   = "peeragent"
	// agentCommand is the path of the agent's main package, from deploy/.
	agentCommand = "../cmd/peeragent"
)

var (
	crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	// podMonitorGVK is the Prometheus Operator's PodMonitor (monitoring/),
	// decoded into podMonitor: its Go types are not in go.mod.
	podMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"}
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
		&calicov3.BGPFilter{}, &calicov3.BGPFilterList{},
		&calicov3.IPPool{}, &calicov3.IPPoolList{})
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

// podMonitor is the part of monitoring.coreos.com/v1 PodMonitor that
// monitoring/ uses; decoded strictly, like crd.
type podMonitor struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels,omitempty"`
	} `json:"metadata"`
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		PodMetricsEndpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval,omitempty"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// manifest is one YAML document of deploy/.
type manifest struct {
	file  string // relative to deploy/
	index int    // of the document in its file, from 0
	gvk   schema.GroupVersionKind
	obj   runtime.Object // decoded by the scheme; nil for a CRD it does not know
	crd   *crd           // CRDs only
	pm    *podMonitor    // PodMonitors only
}

func (m manifest) String() string { return fmt.Sprintf("%s#%d (%s)", m.file, m.index, m.gvk.Kind) }

// fileDirs are the directories of deploy/ whose YAML files are whole
// manifests, loaded file by file. The other directories are overlays of
// base/ (patches and additions), checked through what kustomize renders
// (deploy_kustomize_test.go).
var fileDirs = []string{".", "base", "crds", "crds/v3", "monitoring"}

// manifestFiles lists the YAML files of fileDirs, except the
// kustomization.yaml files.
func manifestFiles(t *testing.T) []string {
	var files []string
	for _, f := range walkFiles(t, func(dir string) bool { return slices.Contains(fileDirs, dir) }) {
		ext := path.Ext(f)
		if (ext == ".yaml" || ext == ".yml") && path.Base(f) != "kustomization.yaml" {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Fatal("no manifests found")
	}
	return files
}

// walkFiles lists the files of deploy/ (slash-separated paths relative to
// it) in lexical order, entering only the directories that enter accepts.
func walkFiles(t *testing.T, enter func(dir string) bool) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && !enter(filepath.ToSlash(p)):
			return fs.SkipDir
		case !d.IsDir():
			files = append(files, filepath.ToSlash(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
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
	if *gvk == podMonitorGVK {
		m.pm = &podMonitor{}
		return m, strictUnmarshal(j, m.pm)
	}
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
