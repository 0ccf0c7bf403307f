package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// actionTypes make an empty action of each name, for DecodeAction; the
// upserts and deletions of the input kinds come from InputKinds.
var actionTypes = withInputActions(map[string]func() Action{
	"sourceSynced":          func() Action { return &SourceSynced{} },
	"inputProblemsReported": func() Action { return &InputProblemsReported{} },
	"peerApplied":           func() Action { return &PeerApplied{} },
	"peerApplyFailed":       func() Action { return &PeerApplyFailed{} },
	"sessionStateChanged":   func() Action { return &SessionStateChanged{} },
	"serverApplied":         func() Action { return &ServerApplied{} },
	"serverApplyFailed":     func() Action { return &ServerApplyFailed{} },
	"peerKeyRefused":        func() Action { return &PeerKeyRefused{} },
	"md5FailuresObserved":   func() Action { return &MD5FailuresObserved{} },
	"kernelLimitsObserved":  func() Action { return &KernelLimitsObserved{} },
	"routesListed":          func() Action { return &RoutesListed{} },
	"routesRescanned":       func() Action { return &RoutesRescanned{} },
	"tableRouteApplied":     func() Action { return &TableRouteApplied{} },
	"tableRouteApplyFailed": func() Action { return &TableRouteApplyFailed{} },
	"bestPathsChanged":      func() Action { return &BestPathsChanged{} },
	"endOfRIBReceived":      func() Action { return &EndOfRIBReceived{} },
	"tick":                  func() Action { return &Tick{} },
	"pathApplied":           func() Action { return &PathApplied{} },
	"pathApplyFailed":       func() Action { return &PathApplyFailed{} },
})

// ActionNames lists every action name, sorted.
func ActionNames() []string {
	return slices.Sorted(maps.Keys(actionTypes))
}

// DecodeAction reads one action in its journal form: a JSON object with a
// single key, the action name, whose value is the action's fields.
// Unknown fields are errors, so a typo in a golden file cannot pass unseen.
func DecodeAction(data []byte) (Action, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("action: %w", err)
	}
	if len(m) != 1 {
		return nil, fmt.Errorf("action: want exactly one key (the action name), got %d", len(m))
	}
	for name, raw := range m {
		mk, ok := actionTypes[name]
		if !ok {
			return nil, fmt.Errorf("action: unknown action %q", name)
		}
		a := mk()
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(a); err != nil {
			return nil, fmt.Errorf("action %s: %w", name, err)
		}
		return reflect.ValueOf(a).Elem().Interface().(Action), nil
	}
	return nil, fmt.Errorf("action: empty")
}

// EncodeAction writes an action in its journal form. Passwords are written
// as fingerprints, so a journal never holds a secret.
func EncodeAction(a Action) ([]byte, error) {
	return json.Marshal(map[string]Action{a.ActionName(): a})
}
