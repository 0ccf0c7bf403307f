package watch

import (
	"reflect"
	"regexp"
	"slices"

	kjson "sigs.k8s.io/json"

	"github.com/peeragent/peeragent/state"
)

// Both sources decode a Calico object's JSON here, so that the cluster is
// as strict as the manifest directory (docs/semantics.md §7): a field the v3
// type does not have (keepaliveTime from a newer Calico, a BGPFilter rule's
// peerType, a typo) is not dropped but listed in the object's Unsupported,
// which makes the reducer treat the object as invalid (its last valid
// version stays in force) with a problem naming the fields.

var unknownField = regexp.MustCompile(`unknown field "([^"]*)"`)

// decodeCalicoJSON decodes b into into (a *v3 type) case-sensitively, with
// integers preserved, and returns the unknown fields by JSON path, sorted.
// A duplicate field or a value of the wrong type is an error.
func decodeCalicoJSON(b []byte, into any) ([]string, error) {
	strict, err := kjson.UnmarshalStrict(b, into, kjson.DisallowUnknownFields, kjson.DisallowDuplicateFields)
	var wide []string
	if err != nil {
		// An AS number too wide for the v3 types is the reducer's to judge,
		// on the object: decode the rest, and list the field as unknown so
		// that withNewer sets it from b.
		var narrow []byte
		if narrow, wide = stripWideASNs(b); wide == nil {
			return nil, err
		}
		reflect.ValueOf(into).Elem().SetZero() // what the failed decode left
		strict, err = kjson.UnmarshalStrict(narrow, into, kjson.DisallowUnknownFields, kjson.DisallowDuplicateFields)
		if err != nil {
			return nil, err
		}
	}
	unknown := wide
	for _, e := range strict {
		m := unknownField.FindStringSubmatch(e.Error())
		if m == nil {
			return nil, e
		}
		unknown = append(unknown, m[1])
	}
	slices.Sort(unknown)
	return slices.Compact(unknown), nil
}

// withUnsupported adds fields to a converted Calico object's Unsupported.
func withUnsupported[T any](v T, fields []string) T {
	if len(fields) == 0 {
		return v
	}
	add := func(cur []string) []string {
		out := slices.Concat(cur, fields)
		slices.Sort(out)
		return slices.Compact(out)
	}
	switch x := any(&v).(type) {
	case *state.BGPPeer:
		x.Unsupported = add(x.Unsupported)
	case *state.BGPConfiguration:
		x.Unsupported = add(x.Unsupported)
	case *state.BGPFilter:
		x.Unsupported = add(x.Unsupported)
	case *state.BlockAffinity:
		x.Unsupported = add(x.Unsupported)
	case *state.IPPool:
		x.Unsupported = add(x.Unsupported)
	}
	return v
}
