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
	if Refusal("other").Text() != "" {
		t.Error("an unknown cause has a text")
	}
}
