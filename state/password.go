package state

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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

// Fingerprint is "sha256:" and the first 8 hex digits of the SHA-256 of the
// text, or "" when empty: enough to see that a rotation landed, useless to
// recover the key.
func (p Password) Fingerprint() string {
	if p.text == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(p.text))
	return "sha256:" + hex.EncodeToString(sum[:4])
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
