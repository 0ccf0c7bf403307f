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
	var rest []string
	for _, f := range unknown {
		if _, ok := newerRead[f]; !ok && !ignoredNewer(v, f) {
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
			p.Spec.wideASNs.set(&x.ASNumber, &x.LocalASNumber)
		}
	case *state.BGPConfiguration:
		var c struct {
			Spec wideASNs `json:"spec"`
		}
		if json.Unmarshal(raw, &c) == nil {
			c.Spec.set(&x.ASNumber, nil)
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

// wideASNs are the AS number fields of a spec as plain numbers.
type wideASNs struct {
	ASNumber      *json.Number `json:"asNumber"`
	LocalASNumber *json.Number `json:"localASNumber"`
}

// set copies the AS numbers that are out of the 32-bit range (the typed
// decode never saw them) into asn and local.
func (w wideASNs) set(asn, local *int64) {
	for _, f := range []struct {
		n   *json.Number
		dst *int64
	}{{w.ASNumber, asn}, {w.LocalASNumber, local}} {
		if f.dst == nil || f.n == nil {
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
// and the problem would name only its file or the list); ok is false when
// there is none.
func stripWideASNs(b []byte) (out []byte, ok bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil {
		return nil, false
	}
	var spec map[string]json.RawMessage
	if json.Unmarshal(obj["spec"], &spec) != nil {
		return nil, false
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
			ok = true
		}
	}
	if !ok {
		return nil, false
	}
	s, err := json.Marshal(spec)
	if err != nil {
		return nil, false
	}
	obj["spec"] = s
	out, err = json.Marshal(obj)
	return out, err == nil
}
