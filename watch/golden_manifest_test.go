package watch

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
	"sigs.k8s.io/yaml"

	"github.com/peeragent/peeragent/golden"
	"github.com/peeragent/peeragent/state"
)

// Every golden doubles as a converter test (docs/design.md, "Adding a setting"): each input object a
// golden's actions carry is written as the Calico or Kubernetes manifest a
// user would write (goldenManifest), decoded through the manifest decoder,
// and must come out equal to the golden's own value. A golden object the
// decoder cannot produce is one the real sources can never deliver; a
// field the converter drops fails here for every golden that sets it.

// noManifestDecoder are the kinds goldens carry that the manifest
// directory does not read yet, with why. Their manifests are still written,
// so that the check starts the day the decoder learns the kind (this test
// then fails to say so).
var noManifestDecoder = map[state.Kind]string{}

// notManifestable are golden objects no manifest can give, by golden and
// object name, with why: values the pinned API's types cannot hold, which
// the decoder reports as a problem of the file instead. The reducer's
// checks of them are defence in depth (the cluster's dynamic client
// decodes through the same types).
var notManifestable = map[string]string{
	"bad-as-number as-too-big":                     "asNumber 4294967296 does not fit numorstring.ASNumber (uint32)",
	"bad-as-number as-negative":                    "asNumber -5 does not fit numorstring.ASNumber (uint32)",
	"bad-as-number local-as-too-big":               "localASNumber 4294967296 does not fit numorstring.ASNumber (uint32)",
	"bad-config-typo-keeps-last-valid default":     "listenPort 70000 does not fit uint16",
	"bad-config-typo-keeps-last-valid node.node-a": "listenPort -1 does not fit uint16",
}

func TestGoldenInputsDecodeFromManifests(t *testing.T) {
	for kind, why := range noManifestDecoder {
		if _, _, ok := lookupManifestKind(manifestAPIVersion(kind), manifestKindName(kind)); ok {
			t.Errorf("%s now decodes from manifests: remove it from noManifestDecoder (%s)", kind, why)
		}
	}
	checked, used := map[state.Kind]int{}, map[string]bool{}
	forEachGoldenObject(t, func(where string, obj any, node, ns string) {
		kind := objectKind(obj)
		if _, skip := noManifestDecoder[kind]; skip {
			return
		}
		key := strings.SplitN(where, ":", 2)[0] + " " + objectName(obj)
		if _, ok := notManifestable[key]; ok {
			used[key] = true
			return
		}
		checked[kind]++
		checkManifestRoundTrip(t, where, obj, node, ns)
	})
	t.Logf("objects decoded from their manifests, by kind: %v", checked)
	for key := range notManifestable {
		if !used[key] {
			t.Errorf("notManifestable lists %q, which no golden has", key)
		}
	}
	for _, k := range state.InputKinds {
		if _, skip := noManifestDecoder[k.Kind()]; !skip && checked[k.Kind()] == 0 {
			t.Errorf("no golden object of kind %s was checked", k.Kind())
		}
	}
}

// forEachGoldenObject calls f with each input object of every golden's
// actions, where it is ("GOLDEN: action N (...): KIND"), and the golden's
// node and namespace.
func forEachGoldenObject(t *testing.T, f func(where string, obj any, node, ns string)) {
	t.Helper()
	files, err := filepath.Glob("../golden/testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no goldens: %v", err)
	}
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var initial, actions []byte
		for _, s := range ar.Files {
			switch s.Name {
			case "initial.yaml":
				initial = s.Data
			case "actions.yaml":
				actions = s.Data
			}
		}
		sc, err := golden.Parse(initial, actions)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		ns := sc.Initial.Options.Namespace
		if ns == "" {
			ns = state.DefaultNamespace
		}
		for i, a := range append(append([]state.Action{}, sc.Setup...), sc.Actions...) {
			for _, obj := range goldenObjects(a) {
				f(fmt.Sprintf("%s: action %d (%s): %s", name, i+1, golden.Describe(a), objectKind(obj)), obj, sc.Initial.Node, ns)
			}
		}
	}
}

func checkManifestRoundTrip(t *testing.T, where string, obj any, node, ns string) {
	t.Helper()
	doc, err := goldenManifest(obj, node, ns)
	if err != nil {
		t.Errorf("%s: cannot write as a manifest: %v", where, err)
		return
	}
	objs, probs := decodeManifestIn(doc, ns, node)
	if len(probs) > 0 || len(objs) != 1 {
		t.Errorf("%s: the manifest decodes to %d objects, problems %v:\n%s", where, len(objs), probs, doc)
		return
	}
	got, want := objs[0].value, obj
	if s, ok := want.(state.Secret); ok && s.Data == nil {
		s.Data = map[string]state.Password{} // a Secret without data converts to an empty map
		want = s
	}
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		t.Errorf("%s: decoded from its manifest as\n  %s\nthe golden has\n  %s\nmanifest:\n%s", where, gj, wj, doc)
	}
}

// goldenObjects are the input objects an action carries: an upsert's, or
// a SourceSynced's of its kind.
func goldenObjects(a state.Action) []any {
	var out []any
	for _, k := range state.InputKinds {
		out = append(out, k.Objects(a)...)
	}
	return out
}

// objectName is an input object's name (the golden's object key).
func objectName(obj any) string {
	var v struct{ Name string }
	b, _ := json.Marshal(obj)
	_ = json.Unmarshal(b, &v)
	return v.Name
}

func objectKind(obj any) state.Kind {
	for _, k := range state.InputKinds {
		if k.Holds(obj) {
			return k.Kind()
		}
	}
	panic(fmt.Sprintf("not an input object: %T", obj))
}

var manifestKindNames = map[state.Kind]string{
	state.KindBGPPeer: "BGPPeer", state.KindBGPConfiguration: "BGPConfiguration", state.KindBGPFilter: "BGPFilter",
	state.KindBlockAffinity: "BlockAffinity", state.KindIPPool: "IPPool", state.KindNode: "Node",
	state.KindSecret: "Secret", state.KindPod: "Pod", state.KindService: "Service", state.KindEndpointSlice: "EndpointSlice",
}

func manifestKindName(k state.Kind) string { return manifestKindNames[k] }

func manifestAPIVersion(k state.Kind) string {
	switch k {
	case state.KindBGPPeer, state.KindBGPConfiguration, state.KindBGPFilter, state.KindBlockAffinity, state.KindIPPool:
		return manifestCRDVersion
	case state.KindEndpointSlice:
		return "discovery.k8s.io/v1"
	}
	return "v1"
}

// goldenManifest writes an input object as its manifest. Calico objects
// are the state value's own JSON (its field names are Calico's) as the
// spec, with the name and annotations moved to metadata, a password wrapped in
// secretKeyRef, and each Unsupported field written as the unknown field it
// stands for; Kubernetes objects are written in their own shape.
func goldenManifest(obj any, node, ns string) ([]byte, error) {
	kind := objectKind(obj)
	doc := map[string]any{"apiVersion": manifestAPIVersion(kind), "kind": manifestKindName(kind)}
	var err error
	switch o := obj.(type) {
	case state.Node:
		ann := map[string]string{}
		for k, v := range map[string]string{AnnotationIPv4: o.IPv4Address, AnnotationIPv6: o.IPv6Address,
			AnnotationASN: o.ASNumber, AnnotationClusterID: o.RRClusterID} {
			if v != "" {
				ann[k] = v
			}
		}
		doc["metadata"] = map[string]any{"name": o.Name, "labels": o.Labels, "annotations": ann}
	case state.Secret:
		data := map[string]string{}
		for k, v := range o.Data {
			data[k] = v.Reveal()
		}
		doc["metadata"] = map[string]any{"name": o.Name, "namespace": ns}
		doc["stringData"] = data
	case state.Pod:
		var ips []map[string]string
		for _, ip := range o.PodIPs {
			ips = append(ips, map[string]string{"ip": ip})
		}
		doc["metadata"] = map[string]any{"name": o.Name, "namespace": o.Namespace}
		doc["spec"] = map[string]any{"nodeName": node, "hostNetwork": o.HostNetwork}
		doc["status"] = map[string]any{"phase": o.Phase, "podIPs": ips}
	case state.Service:
		var ingress []map[string]string
		for _, ip := range o.IngressIPs {
			ingress = append(ingress, map[string]string{"ip": ip})
		}
		doc["metadata"] = map[string]any{"name": o.Name, "namespace": o.Namespace}
		doc["spec"] = map[string]any{"type": o.Type, "clusterIPs": o.ClusterIPs, "externalIPs": o.ExternalIPs,
			"loadBalancerIP": o.LoadBalancerIP, "externalTrafficPolicy": o.ExternalTrafficPolicy, "ipFamilies": o.IPFamilies}
		doc["status"] = map[string]any{"loadBalancer": map[string]any{"ingress": ingress}}
	case state.EndpointSlice:
		var eps []map[string]any
		for _, e := range o.Endpoints {
			eps = append(eps, map[string]any{"nodeName": e.NodeName, "conditions": map[string]any{"ready": e.Ready}})
		}
		doc["metadata"] = map[string]any{"name": o.Name, "namespace": o.Namespace,
			"labels": map[string]string{"kubernetes.io/service-name": o.ServiceName}}
		doc["addressType"], doc["endpoints"] = o.AddressType, eps
	default:
		err = calicoManifest(doc, obj)
	}
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(doc)
}

// calicoManifest fills doc's metadata and spec from a Calico object's
// state value.
func calicoManifest(doc map[string]any, obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	var spec map[string]any
	if err := json.Unmarshal(b, &spec); err != nil {
		return err
	}
	meta := map[string]any{"name": spec["name"]}
	delete(spec, "name")
	if ann, ok := spec["annotations"]; ok { // a BGPPeer's own (state.AnnotationMaxPrefixes)
		meta["annotations"] = ann
		delete(spec, "annotations")
	}
	doc["metadata"] = meta
	for _, f := range []string{"password", "nodeMeshPassword"} {
		if ref, ok := spec[f]; ok {
			spec[f] = map[string]any{"secretKeyRef": ref}
		}
	}
	unsupported, _ := spec["unsupported"].([]any)
	delete(spec, "unsupported")
	for _, u := range unsupported {
		if err := setUnknown(doc, spec, fmt.Sprint(u)); err != nil {
			return err
		}
	}
	doc["spec"] = spec
	return nil
}

// setUnknown writes the unknown field at path ("spec.keepaliveTime",
// "spec.importV4[0].peerType") with a value of its own: an unknown field is
// reported, not read.
func setUnknown(doc, spec map[string]any, path string) error {
	rest, ok := strings.CutPrefix(path, "spec.")
	if !ok {
		return fmt.Errorf("unsupported field %s is not in the spec", path)
	}
	m := spec
	segs := strings.Split(rest, ".")
	for _, seg := range segs[:len(segs)-1] {
		name, idx, indexed := strings.Cut(seg, "[")
		next := m[name]
		if indexed {
			list, _ := next.([]any)
			var i int
			if _, err := fmt.Sscanf(idx, "%d]", &i); err != nil || i >= len(list) {
				return fmt.Errorf("unsupported field %s: no element %s", path, seg)
			}
			next = list[i]
		}
		if m, ok = next.(map[string]any); !ok {
			return fmt.Errorf("unsupported field %s: %s is not an object", path, seg)
		}
	}
	m[segs[len(segs)-1]] = "x"
	return nil
}
