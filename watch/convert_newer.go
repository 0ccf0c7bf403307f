package watch

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/peeragent/peeragent/state"
)

// Calico objects from a cluster (or manifests) newer than the pinned
// projectcalico/api (Calico v3.31's types) carry fields the v3 types lack.
// decodeCalicoJSON reports them as unknown; the ones this agent reads are
// decoded here from the raw JSON, and the ones that mean nothing for BGP
// are dropped from the unknown list. Every other unknown field stays
// Unsupported: a problem naming it (docs/semantics.md §7, README
// "Calico versions").
//
// newerRead lists, by JSON path, the newer fields read here.
var newerRead = map[string]string{
	"spec.keepaliveTime": "BGPPeer, Calico v3.32: the neighbor's keepalive interval (docs/semantics.md §3)",
}

// newerIgnored lists, by JSON path and kind, the newer fields that are not
// read, with why. Anything not here nor in newerRead is Unsupported.
var newerIgnored = map[state.Kind]map[string]string{
	state.KindIPPool: {
		"status": "IPPool status (Calico v3.32): IPAM's allocatability conditions, written by Calico; no BGP meaning",
	},
}

// withNewer is withUnsupported for an object decoded from raw (its JSON):
// the newer fields this agent reads are set from raw, the ignored ones
// dropped, and the rest listed as Unsupported. AS numbers out of the range
// of the v3 types (decodeCalicoJSON keeps them out of the typed decode)
// are set from raw too, so that the reducer names the object
// (docs/semantics.md §7).
func withNewer[T any](v T, raw []byte, unknown []string) T {
	if len(unknown) == 0 {
		return v // the common case: nothing to read again
	}
	var rest []string
	for _, f := range unknown {
		if _, ok := newerRead[f]; !ok && !wideASNField[f] && !ignoredNewer(v, f) {
			rest = append(rest, f)
		}
	}
	switch x := any(&v).(type) {
	case *state.BGPPeer:
		var p struct {
			Spec struct {
				KeepaliveTime *metav1.Duration `json:"keepaliveTime"`
				wideASNs
			} `json:"spec"`
		}
		if json.Unmarshal(raw, &p) == nil {
			if d := p.Spec.KeepaliveTime; d != nil && slices.Contains(unknown, "spec.keepaliveTime") {
				x.KeepaliveTime = &state.Duration{Duration: d.Duration}
			}
			p.Spec.wideASNs.set(unknown, &x.ASNumber, &x.LocalASNumber)
		}
	case *state.BGPConfiguration:
		var c struct {
			Spec wideASNs `json:"spec"`
		}
		if json.Unmarshal(raw, &c) == nil {
			c.Spec.set(unknown, &x.ASNumber, nil)
		}
	}
	return withUnsupported(v, rest)
}

func ignoredNewer(v any, field string) bool {
	var k state.Kind
	switch v.(type) {
	case state.IPPool:
		k = state.KindIPPool
	default:
		return false
	}
	_, ok := newerIgnored[k][field]
	return ok
}

// wideASNField are the paths decodeCalicoJSON lists as unknown when it
// kept an AS number too wide for the v3 types out of the typed decode.
var wideASNField = map[string]bool{"spec.asNumber": true, "spec.localASNumber": true}

// wideASNs are the AS number fields of a spec as plain numbers.
type wideASNs struct {
	ASNumber      *json.Number `json:"asNumber"`
	LocalASNumber *json.Number `json:"localASNumber"`
}

// set copies the AS numbers the typed decode never saw (listed in unknown:
// out of the 32-bit range) into asn and local.
func (w wideASNs) set(unknown []string, asn, local *int64) {
	for _, f := range []struct {
		path string
		n    *json.Number
		dst  *int64
	}{{"spec.asNumber", w.ASNumber, asn}, {"spec.localASNumber", w.LocalASNumber, local}} {
		if f.dst == nil || f.n == nil || !slices.Contains(unknown, f.path) {
			continue
		}
		if v, err := f.n.Int64(); err == nil && !asnFits(v) {
			*f.dst = v
		}
	}
}

func asnFits(v int64) bool { return v >= 0 && v <= math.MaxUint32 }

// stripWideASNs returns b without its spec.asNumber and spec.localASNumber
// when either is a whole number outside 0-4294967295 (which the v3 types'
// ASNumber cannot hold, so the typed decode would refuse the whole object
// and the problem would name only its file or the list), and their paths;
// none when there is none.
func stripWideASNs(b []byte) (out []byte, stripped []string) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil {
		return nil, nil
	}
	var spec map[string]json.RawMessage
	if json.Unmarshal(obj["spec"], &spec) != nil {
		return nil, nil
	}
	for _, k := range []string{"asNumber", "localASNumber"} {
		d := json.NewDecoder(bytes.NewReader(spec[k]))
		d.UseNumber()
		var n json.Number
		if d.Decode(&n) != nil {
			continue
		}
		if v, err := n.Int64(); err == nil && !asnFits(v) {
			delete(spec, k)
			stripped = append(stripped, "spec."+k)
		}
	}
	if len(stripped) == 0 {
		return nil, nil
	}
	s, err := json.Marshal(spec)
	if err != nil {
		return nil, nil
	}
	obj["spec"] = s
	if out, err = json.Marshal(obj); err != nil {
		return nil, nil
	}
	return out, stripped
}
