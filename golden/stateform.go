package golden

import (
	"bytes"
	"encoding/json"
	"reflect"

	"sigs.k8s.io/yaml"

	"github.com/peeragent/peeragent/state"
)

// neighborDefaults are the neighbor settings want-state.yaml leaves out
// when a neighbor has them: Calico's defaults (port 179, a 120 s graceful
// restart, IPv4 unicast, Calico's export rules of docs/routes.md §8.3) and the zero value of every other setting. A
// golden thus shows what a scenario made different, and a new setting
// whose default is listed here (or is its zero value) rewrites no golden
// that does not use it. The /state dump itself still shows every field.
var neighborDefaults = state.Neighbor{Port: 179, GracefulRestartSeconds: 120, Families: []string{"ipv4-unicast"},
	Policy: state.Policy{CalicoExport: true}, MaxPrefixes: state.DefaultMaxPrefixes}

// alwaysPrinted are printed even at their zero value: which neighbor it is
// and where it came from, and the source address, which has no fixed
// default (it is the node's own address), so its absence is news.
var alwaysPrinted = map[string]bool{"address": true, "peerASN": true, "localASN": true, "origin": true,
	"sourceAddress": true}

// StateYAML is the State as want-state.yaml holds it: the /state dump form
// (DumpYAML), with each neighbor's default-valued settings left out.
func StateYAML(s state.State) string {
	j, err := json.Marshal(s.Dump())
	if err != nil {
		return "error: " + err.Error()
	}
	var dump map[string]any
	if err := decode(j, &dump); err != nil {
		return "error: " + err.Error()
	}
	defaults, err := defaultsForm()
	if err != nil {
		return "error: " + err.Error()
	}
	neighbors, _ := dump["neighbors"].([]any)
	for _, n := range neighbors {
		n, _ := n.(map[string]any)
		for k, v := range n {
			if d, ok := defaults[k]; ok && !alwaysPrinted[k] && isDefault(v, d) {
				delete(n, k)
			}
		}
	}
	if j, err = json.Marshal(dump); err != nil {
		return "error: " + err.Error()
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(y)
}

// isDefault compares a setting with its default in the generic form; an
// empty list or map is the same as none (a nil slice dumps as null).
func isDefault(v, d any) bool {
	return reflect.DeepEqual(v, d) || (isEmpty(v) && isEmpty(d))
}

func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// defaultsForm is neighborDefaults in the generic JSON form the dump is
// compared in, so every field (a new one too) is judged the same way.
func defaultsForm() (map[string]any, error) {
	j, err := json.Marshal(&neighborDefaults)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, decode(j, &m)
}

// decode keeps numbers as json.Number, so that no integer goes through a
// float64 on its way to YAML.
func decode(j []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	return dec.Decode(v)
}
