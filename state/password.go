package state

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync/atomic"
)

// Password is a secret value (a BGP TCP-MD5 key). It never prints itself:
// every formatter, JSON and text marshalling show its Fingerprint.
type Password struct{ text string }

// NewPassword wraps a secret value.
func NewPassword(text string) Password { return Password{text: text} }

// Reveal returns the secret text. Only the GoBGP executor may call it, to
// hand the key to the speaker.
func (p Password) Reveal() string { return p.text }

// Len is the length of the text in bytes (a TCP-MD5 key may have 80).
func (p Password) Len() int { return len(p.text) }

// IsZero reports whether there is no password.
func (p Password) IsZero() bool { return p.text == "" }

// Fingerprint is "hmac:" and the first 8 hex digits of the HMAC-SHA256 of
// the text under the process's fingerprint key, or "" when empty: enough to
// see that a rotation landed, useless to recover the key. The key is random
// per process (docs/semantics.md §4), so a dictionary of fingerprints
// computed anywhere else matches none, and fingerprints compare only within
// one run of the agent (or of `plan`).
func (p Password) Fingerprint() string {
	if p.text == "" {
		return ""
	}
	m := hmac.New(sha256.New, *fingerprintKey.Load())
	m.Write([]byte(p.text))
	return "hmac:" + hex.EncodeToString(m.Sum(nil)[:4])
}

// fingerprintKey is the HMAC key of Fingerprint: 32 random bytes drawn at
// process start.
var fingerprintKey atomic.Pointer[[]byte]

func init() {
	key := make([]byte, 32)
	rand.Read(key) // never fails (crypto/rand, Go 1.24 and later)
	fingerprintKey.Store(&key)
}

// SetFingerprintKey replaces the fingerprint key, for output that must be
// the same on every run: the golden scenarios and the plan golden file.
// The agent never calls it.
func SetFingerprintKey(key []byte) {
	k := append([]byte(nil), key...)
	fingerprintKey.Store(&k)
}

// String implements fmt.Stringer with the fingerprint.
func (p Password) String() string { return p.Fingerprint() }

// GoString keeps %#v from printing the text.
func (p Password) GoString() string { return fmt.Sprintf("state.Password(%q)", p.Fingerprint()) }

// Format makes every verb (%v, %+v, %s, %q, %x...) print the fingerprint.
func (p Password) Format(f fmt.State, verb rune) {
	switch verb {
	case 'q':
		fmt.Fprintf(f, "%q", p.Fingerprint())
	default:
		fmt.Fprint(f, p.Fingerprint())
	}
}

// MarshalText is used by JSON and YAML encoders.
func (p Password) MarshalText() ([]byte, error) { return []byte(p.Fingerprint()), nil }

// UnmarshalText reads a password from manifests and golden action files.
func (p *Password) UnmarshalText(b []byte) error { p.text = string(b); return nil }

// MarshalJSON writes a Secret in its journal and log form (the /actions
// journal, the debug log of actions): its name and, for each data key, its
// value's fingerprint under the key's own fingerprint. A data key is never
// written as it is: it is as secret as a value (a password typed as a key,
// `{"k PWLEAKzq7x": ""}`, would show verbatim). Decoding (golden actions)
// still reads plain keys and values.
func (s Secret) MarshalJSON() ([]byte, error) {
	type form struct {
		Name string            `json:"name"`
		Data map[string]string `json:"data,omitempty"`
	}
	f := form{Name: s.Name}
	if len(s.Data) > 0 {
		f.Data = make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			f.Data[NewPassword(k).Fingerprint()] = v.Fingerprint()
		}
	}
	return json.Marshal(f)
}

// String shows the name and how many keys, never a key: for %v of an
// action that holds a Secret.
func (s Secret) String() string { return fmt.Sprintf("secret %s (%d keys)", s.Name, len(s.Data)) }
