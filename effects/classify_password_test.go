package effects

import (
	"strings"
	"testing"

	"github.com/peeragent/peeragent/internal/testrig/fpcollide"
	"github.com/peeragent/peeragent/state"
)

// TestPasswordRotationSameFingerprint: a password is compared by its value,
// never by its 32-bit fingerprint. A rotation to a key whose fingerprint
// collides with the old one's is still a password change that resets the
// session, and the effect's line names it without either key.
func TestPasswordRotationSameFingerprint(t *testing.T) {
	old, cur := fpcollide.ForTest(t, []byte("classify-collision-key"), "rotate-")
	po, pc := state.NewPassword(old), state.NewPassword(cur)
	if po == pc || po.Fingerprint() != pc.Fingerprint() {
		t.Fatalf("no collision: %s %s", po, pc)
	}
	a := &state.Neighbor{Password: po, MaxPrefixes: state.DefaultMaxPrefixes}
	b := *a
	b.Password = pc
	changes, reset := Classify(a, &b)
	if len(changes) != 1 || changes[0].Field != "password" || !reset || !changes[0].Reset {
		t.Fatalf("Classify lists %v (reset %v), want one password change that resets", changes, reset)
	}
	if changes[0].Old == changes[0].New {
		t.Errorf("the change reads as none: %s", changes[0])
	}
	line := UpdatePeer{Old: a, New: &b, Changes: changes, Reset: reset}.String()
	for _, pw := range []string{old, cur} {
		if strings.Contains(line, pw) {
			t.Errorf("the effect line shows a password: %s", line)
		}
	}
	t.Logf("%q and %q share fingerprint %s; effect: %s", "rotate-…", "rotate-…", po.Fingerprint(), line)
	if same, _ := Classify(a, a); len(same) != 0 {
		t.Errorf("the same password listed as a change: %v", same)
	}
}
