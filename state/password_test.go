package state

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const secretText = "hunter2-very-secret"

func TestPasswordNeverPrintsItself(t *testing.T) {
	p := NewPassword(secretText)
	n := Neighbor{Password: p}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "pw", p, "neighbor", n)
	j, _ := json.Marshal(n)
	y, _ := yaml.Marshal(n)
	a, _ := EncodeAction(SecretUpserted{Secret: Secret{Name: "s", Data: map[string]Password{"k": p}}})
	outputs := map[string]string{
		"v": fmt.Sprintf("%v", p), "plus-v": fmt.Sprintf("%+v", n), "sharp-v": fmt.Sprintf("%#v", n),
		"s": fmt.Sprintf("%s", p), "q": fmt.Sprintf("%q", p), "x": fmt.Sprintf("%x", p),
		"string": p.String(), "json": string(j), "yaml": string(y), "slog": logged.String(),
		"journal": string(a),
	}
	for name, out := range outputs {
		t.Run(name, func(t *testing.T) {
			if strings.Contains(out, secretText) {
				t.Errorf("password text in %s output: %s", name, out)
			}
			if !strings.Contains(out, p.Fingerprint()) && name != "x" {
				t.Errorf("fingerprint missing from %s output: %s", name, out)
			}
		})
	}
}

func TestFingerprint(t *testing.T) {
	defer restoreFingerprintKey()()
	SetFingerprintKey([]byte("golden"))
	cases := []struct{ name, in, want string }{
		{"empty", "", ""},
		{"known", "abc", "hmac:" + hmacHex("golden", "abc")[:8]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := NewPassword(c.in).Fingerprint(); got != c.want {
				t.Errorf("Fingerprint(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

// TestFingerprintResistsADictionary attacks a fingerprint as a measured
// attack did (docs/semantics.md §4): the unsalted 32-bit SHA-256 prefix of every word of a
// dictionary (the real password among them) was computed offline, and the
// fingerprint shown in /state looked up in it (under a second). Under the
// process's random key, no word's offline fingerprint (plain SHA-256, or an
// HMAC under an empty or guessed key) matches, and two processes (two
// keys) show the same password differently.
func TestFingerprintResistsADictionary(t *testing.T) {
	const password = "tor-md5-2026"
	shown := NewPassword(password).Fingerprint()
	words := []string{password, "password", "calico", "bgp", "secret", "hunter2", "abc"}
	for i := range 10000 {
		words = append(words, fmt.Sprintf("tor-md5-%d", i))
	}
	for _, w := range words {
		sum := sha256.Sum256([]byte(w))
		for _, guess := range []string{"sha256:" + hex.EncodeToString(sum[:4]), "hmac:" + hmacHex("", w)[:8],
			"hmac:" + hmacHex("peeragent", w)[:8], "hmac:" + hmacHex("golden", w)[:8]} {
			if guess == shown {
				t.Fatalf("the fingerprint %s of the password is found offline from the word %q", shown, w)
			}
		}
	}
	defer restoreFingerprintKey()()
	SetFingerprintKey([]byte("another process"))
	if other := NewPassword(password).Fingerprint(); other == shown || !strings.HasPrefix(other, "hmac:") || len(other) != 13 {
		t.Errorf("under another key the fingerprint is %q (this process: %q), want another hmac: and 8 hex digits", other, shown)
	}
}

func hmacHex(key, text string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(text))
	return hex.EncodeToString(m.Sum(nil))
}

// restoreFingerprintKey returns a func that puts the current key back.
func restoreFingerprintKey() func() {
	k := *fingerprintKey.Load()
	return func() { SetFingerprintKey(k) }
}

func TestActionRoundTrip(t *testing.T) {
	in := `{"peerUpserted":{"peer":{"name":"tor","peerIP":"10.0.0.9:1790","asNumber":65000}}}`
	a, err := DecodeAction([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := EncodeAction(a)
	if err != nil || string(out) != in {
		t.Errorf("round trip: got %s, %v", out, err)
	}
	for _, bad := range []string{`{}`, `{"nope":{}}`, `{"peerDeleted":{"nam":"x"}}`, `{"a":{},"b":{}}`, `[`} {
		if _, err := DecodeAction([]byte(bad)); err == nil {
			t.Errorf("DecodeAction(%s) succeeded", bad)
		}
	}
}

func TestAddrKeyOrder(t *testing.T) {
	addrs := []string{"10.0.0.2", "10.0.0.10", "192.168.0.1", "::1", "fd00::2"}
	var prev string
	for i, s := range addrs {
		k := AddrKey(mustAddr(s))
		if i > 0 && k <= prev {
			t.Errorf("AddrKey(%s) sorts before the previous address", s)
		}
		prev = k
	}
}

// TestPrefixKeyForm pins the keys' text, which orders every listing and
// the golden files: AddrKey is the family digit and the address in hex,
// PrefixKey adds the length in three digits.
func TestPrefixKeyForm(t *testing.T) {
	for _, c := range []struct{ prefix, want string }{
		{"10.0.0.0/8", "40a000000/008"},
		{"100.64.1.2/32", "464400102/032"},
		{"0.0.0.0/0", "400000000/000"},
		{"fd00::/64", "6fd000000000000000000000000000000/064"},
		{"::ffff:10.0.0.1/128", "600000000000000000000ffff0a000001/128"},
	} {
		if got := PrefixKey(netip.MustParsePrefix(c.prefix)); got != c.want {
			t.Errorf("PrefixKey(%s) = %q, want %q", c.prefix, got, c.want)
		}
	}
	if got := AddrKey(netip.Addr{}); got != "6" {
		t.Errorf("AddrKey of the zero Addr = %q, want %q", got, "6")
	}
	if got := PrefixKey(netip.Prefix{}); got != "6/-01" {
		t.Errorf("PrefixKey of the zero Prefix = %q, want %q", got, "6/-01")
	}
}

// TestSecretKeysAreNeverWritten attacks the journal as a measured attack
// did (docs/semantics.md §4): a password typed as a Secret's data key (`{"k PWLEAKzq7x": ""}`,
// an empty value) was shown verbatim in /actions and the debug log. The
// journal form of every action that holds a Secret, and its %v and %+v,
// hold neither the key nor the value.
func TestSecretKeysAreNeverWritten(t *testing.T) {
	const leak = "PWLEAKzq7x"
	sec := Secret{Name: "s", Data: map[string]Password{"k " + leak: NewPassword(""), "pw": NewPassword(leak + "-value")}}
	for _, a := range []Action{SecretUpserted{Secret: sec}, SourceSynced{Kind: KindSecret, Secrets: []Secret{sec}}} {
		j, err := EncodeAction(a)
		if err != nil {
			t.Fatal(err)
		}
		var logged strings.Builder
		slog.New(slog.NewTextHandler(&logged, nil)).Debug("action", "action", string(j), "v", a)
		for name, out := range map[string]string{"journal": string(j), "v": fmt.Sprintf("%v", a),
			"plus-v": fmt.Sprintf("%+v", a), "slog": logged.String()} {
			if strings.Contains(out, leak) {
				t.Errorf("%s: %s form holds a data key or value: %s", a.ActionName(), name, out)
			}
		}
		if !strings.Contains(string(j), NewPassword("k "+leak).Fingerprint()) {
			t.Errorf("%s: the journal lacks the key's fingerprint: %s", a.ActionName(), j)
		}
	}
}
