package state

import "testing"

// TestRefusalsHaveTexts: every cause is listed once and says what it is
// (a new cause without a text would give an empty problem).
func TestRefusalsHaveTexts(t *testing.T) {
	seen := map[Refusal]bool{}
	for _, r := range Refusals {
		if seen[r] {
			t.Errorf("%s listed twice", r)
		}
		seen[r] = true
		if r.Text() == "" {
			t.Errorf("%s has no text", r)
		}
	}
	if Refusal(200).Text() != "" || RefusedNone.Text() != "" {
		t.Error("an unknown cause or none has a text")
	}
	for _, r := range Refusals {
		b, _ := r.MarshalText()
		var back Refusal
		if err := back.UnmarshalText(b); err != nil || back != r || len(b) == 0 {
			t.Errorf("%d: %q read back as %d (%v)", r, b, back, err)
		}
	}
}
