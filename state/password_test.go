package state

import (
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
	cases := []struct{ name, in, want string }{
		{"empty", "", ""},
		{"known", "abc", "sha256:ba7816bf"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := NewPassword(c.in).Fingerprint(); got != c.want {
				t.Errorf("Fingerprint(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
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
