package watch

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	v3 "github.com/projectcalico/api/pkg/apis/projectcalico/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/yaml"

	"github.com/peeragent/peeragent/state"
)

// The API versions a manifest's Calico objects may use: both are read into
// the same v3 types, so a BGPPeer is the same object in either.
const (
	manifestCRDVersion = "crd.projectcalico.org/v1"
	manifestV3Version  = "projectcalico.org/v3"
)

// manifestObject is one converted object of a manifest and where it came
// from.
type manifestObject struct {
	kind    state.Kind
	name    string
	label   string   // e.g. `BGPPeer "tor-a" (projectcalico.org/v3)`
	line    int      // where its document (or List) starts
	value   any      // state.BGPPeer, BGPConfiguration, BGPFilter, Node or Secret
	secrets []string // a Secret's values, kept out of problems about it
}

// manifestKind decodes one kind of object into its state value and name.
type manifestKind struct {
	kind   state.Kind
	decode func(text manifestText) (value any, name string, err error)
}

// manifestText is the text of one object: its YAML, and its JSON when
// manifestJSON converted the whole document (strictly: no key repeated),
// which every decode starts from instead of converting the YAML again. A
// List's item has no JSON (fileDecoder.list), nor has a document
// manifestJSON did not convert: its decodes convert the YAML themselves,
// strictly or leniently as each kind is read.
type manifestText struct {
	yaml []byte
	json []byte
}

// convertManifestDoc converts a document's YAML to JSON once, strictly,
// with its generic tree (manifestJSON): the tree parseManifestTree would
// give, since without a repeated key the lenient conversion is the strict
// one, and converting into an any is converting into nothing in
// particular. Where manifestJSON cannot, it returns no JSON and no tree:
// the caller parses the document leniently, as ever, and the decodes start
// from the YAML.
func convertManifestDoc(doc []byte) (manifestText, any) {
	j, tree, ok := manifestJSON(doc)
	if !ok {
		return manifestText{yaml: doc}, nil
	}
	return manifestText{yaml: doc, json: j}, tree
}

// The kinds the directory source reads, by API version and kind.
var manifestKinds = map[string]manifestKind{
	"calico/BGPPeer":          {state.KindBGPPeer, decodeManifestPeer},
	"calico/BGPConfiguration": {state.KindBGPConfiguration, decodeManifestConfig},
	"calico/BGPFilter":        {state.KindBGPFilter, decodeManifestFilter},
	"calico/BlockAffinity":    {state.KindBlockAffinity, decodeManifestAffinity},
	"calico/IPPool":           {state.KindIPPool, decodeManifestPool},
	"v1/Node":                 {state.KindNode, decodeManifestNode},
	"v1/Secret":               {state.KindSecret, decodeManifestSecret},
	"v1/Pod":                  {state.KindPod, decodeManifestPod},
	"v1/Service":              {state.KindService, decodeManifestService},
	// docs/routes.md §8.4, as the cluster source reads them
	"discovery.k8s.io/v1/EndpointSlice": {state.KindEndpointSlice, decodeManifestSlice},
}

// Calico objects are decoded strictly (unknown or duplicate fields are an
// error, as `kubectl apply` does by default): their spec drives peering,
// and a misspelt field such as nodeSelector would otherwise turn a peer
// into a global one. Nodes and Secrets are decoded leniently: only labels,
// annotations and data are read, and a Node dumped from a newer cluster
// may carry status fields this build does not know.

//
// An unknown field is not a decode error but data: the object carries it in
// Unsupported, exactly as the cluster source does (decodeCalicoJSON), and
// the reducer keeps the object's last valid version with a problem.

func decodeManifestPeer(text manifestText) (any, string, error) {
	var p v3.BGPPeer
	j, unknown, err := decodeManifestCalico(text, &p)
	return withNewer(Peer(&p), j, unknown), p.Name, err
}

func decodeManifestConfig(text manifestText) (any, string, error) {
	var c v3.BGPConfiguration
	j, unknown, err := decodeManifestCalico(text, &c)
	return withNewer(Config(&c), j, unknown), c.Name, err
}

func decodeManifestFilter(text manifestText) (any, string, error) {
	var f v3.BGPFilter
	j, unknown, err := decodeManifestCalico(text, &f)
	return withNewer(Filter(&f), j, unknown), f.Name, err
}

func decodeManifestAffinity(text manifestText) (any, string, error) {
	var a BlockAffinityObject
	j, unknown, err := decodeManifestCalico(text, &a)
	return withNewer(Affinity(&a), j, unknown), a.Name, err
}

func decodeManifestPool(text manifestText) (any, string, error) {
	var p v3.IPPool
	j, unknown, err := decodeManifestCalico(text, &p)
	return withNewer(Pool(&p), j, unknown), p.Name, err
}

// decodeManifestCalico decodes the JSON of YAML converted refusing
// duplicate keys (as `kubectl apply` does) as the cluster source does; it
// returns the JSON for withNewer.
func decodeManifestCalico(text manifestText, into any) ([]byte, []string, error) {
	j := text.json
	if j == nil {
		var err error
		if j, err = yaml.YAMLToJSONStrict(text.yaml); err != nil {
			return nil, nil, err
		}
	}
	unknown, err := decodeCalicoJSON(j, into)
	return j, unknown, err
}

// decodeLenient decodes a Kubernetes object as sigs.k8s.io/yaml's
// Unmarshal of its YAML does (fields matched case-insensitively, unknown
// ones and repeated keys let through). That Unmarshal converts YAML to
// JSON with the type in view: a number or boolean where the type has a
// string (a label `rack: 1`) becomes the string "1". The document's JSON,
// converted with no type in view, has the number there, which
// encoding/json refuses to put in a string: so when the JSON decodes
// without error no value was converted differently and the result is
// Unmarshal's; on any error (or without JSON) into is reset and decoded by
// Unmarshal from the YAML, which also gives its error as ever.
func decodeLenient[T any](text manifestText, into *T) error {
	if text.json != nil {
		if json.Unmarshal(text.json, into) == nil {
			return nil
		}
		var zero T
		*into = zero
	}
	return yaml.Unmarshal(text.yaml, into)
}

func decodeManifestNode(text manifestText) (any, string, error) {
	var n corev1.Node
	err := decodeLenient(text, &n)
	return Node(&n), n.Name, err
}

// manifestPod is a decoded Pod with the node it is on, which decides
// whether it is read at all (fileDecoder.object).
type manifestPod struct {
	pod  state.Pod
	node string
}

// decodeManifestPod reads a Pod leniently, as a Node (only what
// docs/routes.md §8.1 rule 3 reads, and a Pod dumped from a cluster carries
// many fields); its name is NAMESPACE/NAME, "default" when it has none.
func decodeManifestPod(text manifestText) (any, string, error) {
	var p corev1.Pod
	err := decodeLenient(text, &p)
	if p.Namespace == "" {
		p.Namespace = "default"
	}
	name := ""
	if p.Name != "" {
		name = p.Namespace + "/" + p.Name
	}
	return manifestPod{pod: Pod(&p), node: p.Spec.NodeName}, name, err
}

// decodeManifestService reads a Service leniently, as a Pod (a dump from
// a cluster carries many fields); its name is NAMESPACE/NAME, "default"
// when it has none.
func decodeManifestService(text manifestText) (any, string, error) {
	var s corev1.Service
	err := decodeLenient(text, &s)
	if s.Namespace == "" {
		s.Namespace = "default"
	}
	return Service(&s), namespacedName(s.Namespace, s.Name), err
}

// decodeManifestSlice reads an EndpointSlice as decodeManifestService a
// Service.
func decodeManifestSlice(text manifestText) (any, string, error) {
	var e discoveryv1.EndpointSlice
	err := decodeLenient(text, &e)
	if e.Namespace == "" {
		e.Namespace = "default"
	}
	return EndpointSlice(&e), namespacedName(e.Namespace, e.Name), err
}

// namespacedName is NAMESPACE/NAME, or "" without a name.
func namespacedName(ns, name string) string {
	if name == "" {
		return ""
	}
	return ns + "/" + name
}

// decodeManifestSecret never returns the decoder's own error, which may
// quote the data: only what kind of mistake it is.
func decodeManifestSecret(text manifestText) (any, string, error) {
	var s corev1.Secret
	if err := decodeLenient(text, &s); err != nil {
		if strings.Contains(err.Error(), "base64") {
			return nil, s.Name, fmt.Errorf("data is not valid base64 (%s)", secretWithheld)
		}
		return nil, s.Name, fmt.Errorf("does not decode as a v1 Secret (%s)", secretWithheld)
	}
	return Secret(&s), s.Name, nil
}

// lookupManifestKind returns how to read a document of apiVersion and kind. It
// returns ok=false with an empty reason for documents the source ignores
// (other Kubernetes kinds, Calico kinds other than BGP ones), and with a
// reason for ones it should have read but cannot.
func lookupManifestKind(apiVersion, kind string) (mk manifestKind, reason string, ok bool) {
	group, _, _ := strings.Cut(apiVersion, "/")
	calico := group == "crd.projectcalico.org" || group == "projectcalico.org"
	switch {
	case apiVersion == manifestCRDVersion || apiVersion == manifestV3Version:
		if mk, ok := manifestKinds["calico/"+kind]; ok {
			return mk, "", true
		}
		if strings.HasPrefix(strings.ToLower(kind), "bgp") {
			return mk, fmt.Sprintf("unknown kind %q in %s", kind, apiVersion), false
		}
	case calico && manifestKinds["calico/"+kind].decode != nil:
		return mk, fmt.Sprintf("%s: unsupported apiVersion %q (want %s or %s)",
			kind, apiVersion, manifestCRDVersion, manifestV3Version), false
	case apiVersion == "v1" || apiVersion == "discovery.k8s.io/v1":
		if mk, ok := manifestKinds[apiVersion+"/"+kind]; ok {
			return mk, "", true
		}
	case apiVersion == "" && kind == "":
		return mk, "not a manifest: no apiVersion and kind", false
	case apiVersion == "":
		return mk, fmt.Sprintf("%s: missing apiVersion", kind), false
	}
	if kind == "" && (calico || apiVersion == "v1") {
		return mk, fmt.Sprintf("missing kind (apiVersion %s)", apiVersion), false
	}
	return mk, "", false
}

// manifestLabel names an object in problems, e.g. `BGPPeer "tor-a"
// (projectcalico.org/v3)` or `Secret "bgp" (namespace "ns")`.
func manifestLabel(apiVersion, kind string, meta map[string]any) string {
	name, _ := meta["name"].(string)
	label := kind + " " + strconv.Quote(name) // as %q
	if apiVersion != "v1" {
		return label + " (" + apiVersion + ")"
	}
	if ns, _ := meta["namespace"].(string); kind == "Secret" && ns != "" {
		label += " (namespace " + strconv.Quote(ns) + ")"
	}
	return label
}

// parseManifestTree reads a document (YAML or JSON) into generic values, numbers
// kept as json.Number, to learn its kind before the typed decode.
func parseManifestTree(raw []byte) (any, error) {
	var tree any
	err := yaml.Unmarshal(raw, &tree, func(d *json.Decoder) *json.Decoder { d.UseNumber(); return d })
	return tree, err
}
