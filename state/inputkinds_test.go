package state

import (
	"reflect"
	"strings"
	"testing"
)

// TestInputKindsCoverKinds: InputKinds declares every input kind once,
// the SyncedKinds first and in their order (the dump lists synced kinds in
// this order), and every upsert or deletion action belongs to one of them.
func TestInputKindsCoverKinds(t *testing.T) {
	seen := map[Kind]bool{}
	for i, k := range InputKinds {
		if seen[k.Kind()] {
			t.Errorf("kind %s declared twice", k.Kind())
		}
		seen[k.Kind()] = true
		if i < len(SyncedKinds) && k.Kind() != SyncedKinds[i] {
			t.Errorf("InputKinds[%d] is %s, SyncedKinds[%d] %s: the synced kinds come first, in their order", i, k.Kind(), i, SyncedKinds[i])
		}
	}
	for _, k := range []Kind{KindSecret, KindService, KindEndpointSlice} {
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
// a SourceSynced of the kind lists the object.
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
		ss := reflect.ValueOf(&SourceSynced{Kind: k.Kind()}).Elem()
		for i := 0; i < ss.NumField(); i++ {
			if f := ss.Field(i); f.Kind() == reflect.Slice && f.Type().Elem() == obj.Type() {
				f.Set(reflect.Append(f, obj))
			}
		}
		if got := k.Objects(ss.Interface().(Action)); len(got) != 1 || !reflect.DeepEqual(got[0], obj.Interface()) {
			t.Errorf("%s: a SourceSynced lists %v", k.Kind(), got)
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
