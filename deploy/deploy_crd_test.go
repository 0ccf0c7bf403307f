package deploy

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	calicov3 "github.com/projectcalico/api/pkg/apis/projectcalico/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/peeragent/peeragent/internal/testrig/fieldcov"
)

var (
	validTypes     = []string{"object", "array", "string", "integer", "number", "boolean"}
	integerFormats = []string{"", "int32", "int64"}
)

// peerSpecNewer is the BGPPeer spec the agent reads: the pinned API's and
// the newer fields it decodes from the raw object (watch/convert_newer.go).
type peerSpecNewer struct {
	calicov3.BGPPeerSpec
	KeepaliveTime *metav1.Duration `json:"keepaliveTime,omitempty"`
}

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
		spec                                     any // the Go spec type when not the scheme's
	}{
		{"bgppeers-v1", "crds/crd.projectcalico.org_bgppeers.yaml", "crd.projectcalico.org", "v1", "BGPPeer", "bgppeers", peerSpecNewer{}},
		{"bgpconfigurations-v1", "crds/crd.projectcalico.org_bgpconfigurations.yaml", "crd.projectcalico.org", "v1", "BGPConfiguration", "bgpconfigurations", nil},
		{"bgpfilters-v1", "crds/crd.projectcalico.org_bgpfilters.yaml", "crd.projectcalico.org", "v1", "BGPFilter", "bgpfilters", nil},
		{"bgppeers-v3", "crds/v3/projectcalico.org_bgppeers.yaml", "projectcalico.org", "v3", "BGPPeer", "bgppeers", peerSpecNewer{}},
		{"bgpconfigurations-v3", "crds/v3/projectcalico.org_bgpconfigurations.yaml", "projectcalico.org", "v3", "BGPConfiguration", "bgpconfigurations", nil},
		{"bgpfilters-v3", "crds/v3/projectcalico.org_bgpfilters.yaml", "projectcalico.org", "v3", "BGPFilter", "bgpfilters", nil},
		{"ippools-v1", "crds/crd.projectcalico.org_ippools.yaml", "crd.projectcalico.org", "v1", "IPPool", "ippools", nil},
		{"ippools-v3", "crds/v3/projectcalico.org_ippools.yaml", "projectcalico.org", "v3", "IPPool", "ippools", nil},
		{"blockaffinities-v1", "crds/crd.projectcalico.org_blockaffinities.yaml", "crd.projectcalico.org", "v1", "BlockAffinity", "blockaffinities", affinitySpecV1{}},
		{"blockaffinities-v3", "crds/v3/projectcalico.org_blockaffinities.yaml", "projectcalico.org", "v3", "BlockAffinity", "blockaffinities", affinitySpecV3{}},
		{"caliconodestatuses-v1", "crds/crd.projectcalico.org_caliconodestatuses.yaml", "crd.projectcalico.org", "v1", "CalicoNodeStatus", "caliconodestatuses", calicov3.CalicoNodeStatusSpec{}},
		{"caliconodestatuses-v3", "crds/v3/projectcalico.org_caliconodestatuses.yaml", "projectcalico.org", "v3", "CalicoNodeStatus", "caliconodestatuses", nil},
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
			specType := reflect.TypeOf(c.spec)
			if c.spec == nil {
				gvk := schema.GroupVersionKind{Group: c.group, Version: c.version, Kind: c.kind}
				obj, err := s.New(gvk)
				if err != nil {
					t.Fatalf("scheme: %v", err)
				}
				specField := reflect.ValueOf(obj).Elem().FieldByName("Spec")
				if !specField.IsValid() {
					t.Fatalf("%T has no Spec", obj)
				}
				specType = specField.Type()
			}
			full := reflect.New(specType)
			fieldcov.Fill(full.Elem())
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
			if c.kind == "CalicoNodeStatus" { // the agent writes its status
				for _, err := range matchStatus(root) {
					t.Error(err)
				}
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
			if c.plural == "blockaffinities" { // deleted: a string in v1, a bool in v3
				props := v3.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties
				d := props["deleted"]
				d.Type, d.Description = "string", v1.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["deleted"].Description
				props["deleted"] = d
			}
			if !reflect.DeepEqual(v1.Spec.Names, v3.Spec.Names) || !reflect.DeepEqual(v1.Spec.Versions[0].Schema, v3.Spec.Versions[0].Schema) {
				t.Errorf("%s: the v1 and v3 CRDs differ in names or schema", c.plural)
			}
		}
	})
}

// matchStatus compares a CalicoNodeStatus schema's status with Calico's
// Go type, every field filled (lastUpdated set: a zero time is null).
func matchStatus(root *jsonSchema) []error {
	var st calicov3.CalicoNodeStatusStatus
	fieldcov.Fill(reflect.ValueOf(&st).Elem())
	st.LastUpdated = metav1.Unix(1, 0)
	j, err := json.Marshal(st)
	if err != nil {
		return []error{err}
	}
	var value any
	if err := json.Unmarshal(j, &value); err != nil {
		return []error{err}
	}
	statusSchema, ok := root.Properties["status"]
	if !ok {
		return []error{errors.New("no status in the schema (the API server would drop what the agent writes)")}
	}
	return matchSchema("status", value, &statusSchema)
}

// The BlockAffinity spec as the agent reads it (watch.BlockAffinityObject):
// Calico's v3 type, whose deleted the crd.projectcalico.org/v1 CRD stores as
// a string, plus type (newer Calico).
type (
	affinitySpecV1 struct {
		State   string `json:"state"`
		Node    string `json:"node"`
		CIDR    string `json:"cidr"`
		Deleted string `json:"deleted,omitempty"`
		Type    string `json:"type,omitempty"`
	}
	affinitySpecV3 struct {
		State   string `json:"state"`
		Node    string `json:"node"`
		CIDR    string `json:"cidr"`
		Deleted bool   `json:"deleted,omitempty"`
		Type    string `json:"type,omitempty"`
	}
)

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
