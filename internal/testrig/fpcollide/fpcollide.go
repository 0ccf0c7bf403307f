// Package fpcollide finds two passwords with the same fingerprint
// (state.Password.Fingerprint: 32 bits of an HMAC under the process's key),
// so that tests can prove a password change is never judged by its
// fingerprint. For tests only.
package fpcollide

import (
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// ForTest is Find for t: a cleanup gives the process a new random
// fingerprint key when t ends, so no later test runs under key.
func ForTest(t testing.TB, key []byte, prefix string) (a, b string) {
	t.Cleanup(func() { state.SetFingerprintKey([]byte(rand.Text())) })
	return Find(key, prefix)
}

// Find sets the fingerprint key to key (state.SetFingerprintKey: the
// whole process's) and returns two different passwords, each starting
// with prefix, whose fingerprints are equal under it. A birthday search:
// about 80,000 fingerprints on average, deterministic for a key.
func Find(key []byte, prefix string) (a, b string) {
	state.SetFingerprintKey(key)
	seen := make(map[string]string, 1<<17)
	for i := 0; ; i++ {
		pw := fmt.Sprintf("%s%d", prefix, i)
		fp := state.NewPassword(pw).Fingerprint()
		if other, ok := seen[fp]; ok {
			return other, pw
		}
		seen[fp] = pw
	}
}
