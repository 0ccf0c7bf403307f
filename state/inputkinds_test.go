package state

import (
	"reflect"
	"strings"
	"testing"
)

// TestInputKindsCoverKinds: InputKinds declares every input kind once,
// the SyncedKinds among them, and every upsert or deletion action belongs
// to one of them.
func TestInputKindsCoverKinds(t *testing.T) {
	seen := map[Kind]bool{}
	for _, k := range InputKinds {
		if seen[k.Kind()] {
			t.Errorf("kind %s declared twice", k.Kind())
		}
		seen[k.Kind()] = true
	}
	for _, k := range append([]Kind{KindSecret, KindService, KindEndpointSlice}, SyncedKinds...) {
		if !seen[k] {
			t.Errorf("kind %s is not in InputKinds", k)
		}
	}
	for _, name := range ActionNames() {
		if !strings.HasSuffix(name, "Upserted") && !strings.HasSuffix(name, "Deleted") {
			continue
		}
		a, err := DecodeAction([]byte(`{"` + name + `":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		if InputOf(a) == nil {
			t.Errorf("action %s belongs to no InputKind", name)
		}
	}
}

// TestInputKindKeys: each kind keys an object, its upsert and its
// deletion alike: NAMESPACE/NAME for a namespaced kind, else the name; and
// its list in a SourceSynced takes, sorts and gives back its objects.
func TestInputKindKeys(t *testing.T) {
	for _, k := range InputKinds {
		upsert, del := k.ActionNames()
		u, err := DecodeAction([]byte(`{"` + upsert + `":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		d, err := DecodeAction([]byte(`{"` + del + `":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		uv := reflect.New(reflect.TypeOf(u)).Elem()
		uv.Set(reflect.ValueOf(u))
		obj := uv.Field(0) // an upsert carries its object alone
		want := "n"
		if setName(obj) {
			want = "ns/n"
		}
		dv := reflect.New(reflect.TypeOf(d)).Elem()
		setName(dv)
		for _, a := range []Action{uv.Interface().(Action), dv.Interface().(Action)} {
			if key, ok := k.ActionKey(a); !ok || key != want {
				t.Errorf("%s: %s has key %q (%v), want %q", k.Kind(), a.ActionName(), key, ok, want)
			}
			if InputOf(a) != k {
				t.Errorf("%s: InputOf(%s) is another kind", k.Kind(), a.ActionName())
			}
		}
		first := reflect.New(obj.Type()).Elem() // key "a" or "/a": before obj's
		first.FieldByName("Name").SetString("a")
		var all SourceSynced
		if !k.Holds(obj.Interface()) || !k.Append(&all, obj.Interface()) || !k.Append(&all, first.Interface()) ||
			k.Append(&all, struct{}{}) {
			t.Errorf("%s: does not hold its own objects, or holds others", k.Kind())
		}
		k.SortByKey(&all)
		ss := k.Synced(&all)
		if got := k.Objects(ss); ss.Kind != k.Kind() || len(got) != 2 || !reflect.DeepEqual(got, []any{first.Interface(), obj.Interface()}) {
			t.Errorf("%s: a SourceSynced of the kind, sorted, lists %v", k.Kind(), got)
		}
		if got := k.Objects(uv.Interface().(Action)); len(got) != 1 || !reflect.DeepEqual(got[0], obj.Interface()) {
			t.Errorf("%s: an upsert carries %v", k.Kind(), got)
		}
	}
}

// setName sets a struct's Name to "n" and its Namespace, if it has one,
// to "ns"; true when it has.
func setName(v reflect.Value) bool {
	v.FieldByName("Name").SetString("n")
	ns := v.FieldByName("Namespace")
	if ns.IsValid() {
		ns.SetString("ns")
	}
	return ns.IsValid()
}
