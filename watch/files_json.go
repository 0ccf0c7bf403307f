package watch

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	yaml2 "go.yaml.in/yaml/v2"
)

// manifestJSON converts a document's YAML to JSON exactly as
// sigs.k8s.io/yaml's YAMLToJSONStrict does (go-yaml v2's strict parse into
// generic values, keys made strings, json.Marshal), and returns with it the
// generic tree that decoding that JSON with UseNumber gives, built during
// the conversion rather than decoded from the JSON again. ok is false when
// the strict parse fails (a repeated key, a syntax error), and wherever
// the tree built could differ from the JSON's: a string or key that is not
// UTF-8 (json.Marshal replaces its bytes), two keys that convert to the
// same text (1 and "1"), a number JSON cannot hold (.inf), a key or value
// of a type the conversion does not expect. The caller then reads the
// document the old way (parseManifestTree).
func manifestJSON(doc []byte) (j []byte, tree any, ok bool) {
	var y any
	if yaml2.UnmarshalStrict(doc, &y) != nil {
		return nil, nil, false
	}
	if tree, ok = jsonTree(y); !ok {
		return nil, nil, false
	}
	j, err := json.Marshal(tree)
	if err != nil {
		return nil, nil, false
	}
	return j, tree, true
}

// jsonTree converts one of go-yaml v2's generic values into what
// json.Marshal then a json.Decoder with UseNumber make of it, or returns
// ok false.
func jsonTree(y any) (any, bool) {
	switch y := y.(type) {
	case map[any]any:
		if y == nil {
			return nil, true // null
		}
		m := make(map[string]any, len(y))
		for k, v := range y {
			key, ok := jsonKey(k)
			if !ok {
				return nil, false
			}
			if m[key], ok = jsonTree(v); !ok {
				return nil, false
			}
		}
		return m, len(m) == len(y) // no two keys converted alike
	case []any:
		if y == nil {
			return nil, true
		}
		s := make([]any, len(y))
		for i, v := range y {
			var ok bool
			if s[i], ok = jsonTree(v); !ok {
				return nil, false
			}
		}
		return s, true
	case string:
		return y, utf8.ValidString(y)
	case bool, nil:
		return y, true
	case int:
		return json.Number(strconv.Itoa(y)), true
	case int64:
		return json.Number(strconv.FormatInt(y, 10)), true
	case uint64:
		return json.Number(strconv.FormatUint(y, 10)), true
	case float64:
		b, err := json.Marshal(y) // JSON's own notation; an error for NaN and infinities
		return json.Number(b), err == nil
	}
	return nil, false
}

// jsonKey is the JSON key sigs.k8s.io/yaml makes of a YAML key: strings
// as they are, integers in decimal, floats as go-yaml writes them
// (32-bit), booleans as true or false.
func jsonKey(k any) (string, bool) {
	switch k := k.(type) {
	case string:
		return k, utf8.ValidString(k)
	case int:
		return strconv.Itoa(k), true
	case int64:
		return strconv.FormatInt(k, 10), true
	case float64:
		switch s := strconv.FormatFloat(k, 'g', -1, 32); s {
		case "+Inf":
			return ".inf", true
		case "-Inf":
			return "-.inf", true
		case "NaN":
			return ".nan", true
		default:
			return s, true
		}
	case bool:
		return strconv.FormatBool(k), true
	}
	return "", false
}
