package fieldcov

import (
	"fmt"
	"reflect"
	"strings"
)

// The input-edge guards (watch/convert_fields_test.go) walk the upstream
// types a converter reads down to their leaves: a leaf is set alone to a
// non-zero value and the conversion must notice. A path names a leaf by
// Go field names: "Spec.ASNumber", "Spec.Communities[].Name" (the first
// element of a slice of structs), "ObjectMeta.Annotations[some/key]" (one
// key of a map).

// maxDepth bounds the walk, so that a recursive type stops it loudly.
const maxDepth = 10

// Leaves lists the leaf paths of v's struct type under each root (a path
// to a field; its leaves are the field itself when it is no struct,
// pointer to a struct or slice of structs, else those of its fields), in
// declaration order.
func Leaves(v any, roots ...string) []string {
	t := reflect.TypeOf(v)
	var out []string
	for _, root := range roots {
		ft := typeAt(t, root)
		out = appendLeaves(out, root, ft, 0)
	}
	return out
}

func appendLeaves(out []string, path string, t reflect.Type, depth int) []string {
	if depth > maxDepth {
		panic("fieldcov: type too deep (recursive?) at " + path)
	}
	switch {
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct:
		return appendLeaves(out, path, t.Elem(), depth)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		return appendLeaves(out, path+"[]", t.Elem(), depth)
	case t.Kind() != reflect.Struct:
		return append(out, path)
	}
	n := 0
	for i := range t.NumField() {
		f := t.Field(i)
		if f.IsExported() {
			n++
			out = appendLeaves(out, path+"."+f.Name, f.Type, depth+1)
		}
	}
	if n == 0 {
		panic("fieldcov: a struct without exported fields at " + path)
	}
	return out
}

// typeAt is the type of the field at path in t.
func typeAt(t reflect.Type, path string) reflect.Type {
	for _, seg := range splitPath(path) {
		name, idx, indexed := strings.Cut(seg, "[")
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		f, ok := t.FieldByName(name)
		if !ok {
			panic(fmt.Sprintf("fieldcov: %s has no field %s (path %s)", t, name, path))
		}
		t = f.Type
		if indexed {
			_ = idx
			t = t.Elem()
		}
	}
	return t
}

// WithLeaf returns a copy of base (a struct value) with the leaf at path
// set to a non-zero value (NonZero), allocating the pointers, one-element
// slices and maps on the way. The slices, maps and pointers it makes never
// alias base's.
func WithLeaf[T any](base T, path string) T {
	v := reflect.ValueOf(&base).Elem()
	setPath(v, splitPath(path), true)
	return base
}

// WithLeafAny is WithLeaf on a struct value held in an interface.
func WithLeafAny(base any, path string) any { return withPath(base, path, true) }

// WithContainersAny is WithLeafAny with the leaf itself left zero: only
// the pointers, one-element slices and map entries on the way are made.
// A guard compares the two, so that a leaf inside a slice of structs is
// judged by itself, not by the element it needs.
func WithContainersAny(base any, path string) any { return withPath(base, path, false) }

func withPath(base any, path string, leaf bool) any {
	v := reflect.New(reflect.TypeOf(base)).Elem()
	v.Set(reflect.ValueOf(base))
	setPath(v, splitPath(path), leaf)
	return v.Interface()
}

func setPath(v reflect.Value, segs []string, leaf bool) {
	if len(segs) == 0 {
		if leaf {
			NonZero(v)
		}
		return
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	name, rest, indexed := strings.Cut(segs[0], "[")
	f := v.FieldByName(name)
	if !f.IsValid() {
		panic(fmt.Sprintf("fieldcov: %s has no field %s", v.Type(), name))
	}
	if !indexed {
		setPath(f, segs[1:], leaf)
		return
	}
	key := strings.TrimSuffix(rest, "]")
	switch f.Kind() {
	case reflect.Slice:
		s := reflect.MakeSlice(f.Type(), 1, 1)
		if f.Len() > 0 {
			s = reflect.AppendSlice(reflect.MakeSlice(f.Type(), 0, f.Len()), f)
		}
		f.Set(s)
		setPath(f.Index(0), segs[1:], leaf)
	case reflect.Map:
		m := reflect.MakeMap(f.Type())
		for it := f.MapRange(); it.Next(); {
			m.SetMapIndex(it.Key(), it.Value())
		}
		e := reflect.New(f.Type().Elem()).Elem()
		setPath(e, segs[1:], leaf)
		m.SetMapIndex(reflect.ValueOf(key).Convert(f.Type().Key()), e)
		f.Set(m)
	default:
		panic(fmt.Sprintf("fieldcov: %s[%s] indexes a %s", name, key, f.Type()))
	}
}

// NonZero sets v, which holds its zero value, to a non-zero one: true, 1,
// "x", a pointer to a non-zero value, a slice of one non-zero element, a
// map of one entry {"x": non-zero}, a struct with its first field
// non-zero. It panics on a type it does not know, so a guard cannot pass
// by not setting.
func NonZero(v reflect.Value) { nonZero(v, false) }

// Fill is NonZero setting every exported field of a struct, not only its
// first, so that the JSON form of v shows every field; a struct without
// one (time.Time) stays as it is.
func Fill(v reflect.Value) { nonZero(v, true) }

func nonZero(v reflect.Value, every bool) {
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.String:
		v.SetString("x")
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		nonZero(p.Elem(), every)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		nonZero(s.Index(0), every)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		nonZero(k, every)
		e := reflect.New(v.Type().Elem()).Elem()
		nonZero(e, every)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		if every {
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					nonZero(v.Field(i), true)
				}
			}
			return
		}
		if v.NumField() == 0 || !v.Type().Field(0).IsExported() {
			panic(fmt.Sprintf("fieldcov: cannot make a non-zero %s", v.Type()))
		}
		nonZero(v.Field(0), false)
	default:
		panic(fmt.Sprintf("fieldcov: cannot make a non-zero %s", v.Type()))
	}
	if v.IsZero() {
		panic(fmt.Sprintf("fieldcov: a %s stayed zero", v.Type()))
	}
}

// splitPath cuts a path at the dots outside brackets (a map key may hold
// dots: "Annotations[projectcalico.org/IPv4Address]").
func splitPath(path string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range path {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case '.':
			if depth == 0 {
				out = append(out, path[start:i])
				start = i + 1
			}
		}
	}
	return append(out, path[start:])
}
