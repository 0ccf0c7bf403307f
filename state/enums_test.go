package state

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestEnumJSONForms pins the /state form of the typed enums: the string
// itself, so clients of the dump (status, scripts) see no change.
func TestEnumJSONForms(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Phases() {
		b, err := json.Marshal(Session{Phase: p})
		if err != nil || !strings.Contains(string(b), `"phase":"`+p.String()+`"`) || p == "" || seen[p.String()] {
			t.Errorf("phase %q: %s, %v (empty or repeated?)", p, b, err)
		}
		seen[p.String()] = true
	}
	var s Session
	if err := json.Unmarshal([]byte(`{"phase":"established"}`), &s); err != nil ||
		s.Phase != PhaseEstablished {
		t.Errorf("decoded %+v, %v", s, err)
	}
}
