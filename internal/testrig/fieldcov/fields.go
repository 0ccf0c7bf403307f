// Package fieldcov backs the field-coverage guards: reflection over a struct
// (state.Neighbor above all) that lists its fields and changes one at a
// time, so that a test can prove that Equal, the classify table, the GoBGP
// mapping and the plan form each notice every field, or say in a table why
// they ignore it. Without it, a new field that one of those hand-written
// lists forgets fails silently (docs/design.md, "Adding a setting"). The
// guards' shared checks are in guard.go: Equal (a hand-written Equal),
// Ignores (a comparison that may ignore listed fields) and Form (a table
// or output type listing the fields by JSON name).
package fieldcov

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"

	"github.com/peeragent/peeragent/state"
)

// Field is one exported field of a struct.
type Field struct {
	Name string // the Go name, e.g. PeerASN
	JSON string // the name in the JSON form (its json tag), e.g. peerASN
}

// Of lists the exported fields of v's struct type (v a struct or a pointer
// to one), in declaration order.
func Of(v any) []Field {
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []Field
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "" {
			tag = f.Name
		}
		out = append(out, Field{Name: f.Name, JSON: tag})
	}
	return out
}

// Changed returns a copy of base with the named field set to a different
// value (Change). base is a struct value; it is not modified, but a changed
// slice or pointer field never aliases base's.
func Changed[T any](base T, name string) T {
	v := reflect.ValueOf(&base).Elem()
	f := v.FieldByName(name)
	if !f.IsValid() {
		panic(fmt.Sprintf("fieldcov: %T has no field %s", base, name))
	}
	Change(f)
	return base
}

var (
	addrType     = reflect.TypeFor[netip.Addr]()
	prefixType   = reflect.TypeFor[netip.Prefix]()
	passwordType = reflect.TypeFor[state.Password]()
)

// Change sets v to a value different from the one it holds: a flipped bool,
// a number with its lowest bit flipped, a string with "x" appended, a slice
// one element shorter (or one zero element longer when empty), a nil
// pointer made non-nil and back, an address or prefix moved, a password
// lengthened, and for any other struct its first field changed. It panics
// on a type it does not know, so a guard cannot pass by not changing.
func Change(v reflect.Value) {
	switch v.Type() {
	case addrType:
		a := netip.MustParseAddr("192.0.2.77")
		if v.Interface().(netip.Addr) == a {
			a = a.Next()
		}
		v.Set(reflect.ValueOf(a))
		return
	case prefixType:
		p := netip.MustParsePrefix("198.51.100.0/24")
		if v.Interface().(netip.Prefix) == p {
			p = netip.MustParsePrefix("198.51.100.0/25")
		}
		v.Set(reflect.ValueOf(p))
		return
	case passwordType:
		v.Set(reflect.ValueOf(state.NewPassword(v.Interface().(state.Password).Reveal() + "x")))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() ^ 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() ^ 1)
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Slice:
		n := v.Len()
		if n == 0 {
			v.Set(reflect.Append(reflect.MakeSlice(v.Type(), 0, 1), reflect.Zero(v.Type().Elem())))
			return
		}
		s := reflect.MakeSlice(v.Type(), n-1, n-1)
		reflect.Copy(s, v)
		v.Set(s)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		} else {
			v.Set(reflect.Zero(v.Type()))
		}
	case reflect.Struct:
		if v.NumField() == 0 || !v.Type().Field(0).IsExported() {
			panic(fmt.Sprintf("fieldcov: cannot change a %s", v.Type()))
		}
		Change(v.Field(0))
	default:
		panic(fmt.Sprintf("fieldcov: cannot change a %s", v.Type()))
	}
}
