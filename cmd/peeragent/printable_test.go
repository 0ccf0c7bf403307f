package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// TestTextFormsEscapeControlCharacters: a BGPPeer name with a newline or
// an ANSI escape code, and a problem reason with one, print escaped in
// the plan's text form, on one line each, and plain names print as they
// are.
func TestTextFormsEscapeControlCharacters(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"tor-a", "tor-a"},
		{"évian-ü", "évian-ü"},
		{"evil\nname", `evil\nname`},
		{"red\x1b[31mtext", `red\x1b[31mtext`},
		{"nul\x00", `nul\x00`},
	} {
		if got := printable(tc.in); got != tc.want {
			t.Errorf("printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	p := Plan{Node: "node\x1b[2J", Neighbors: []PlanNeighbor{{Origin: "bgppeer/a\nb"}},
		Problems: []state.Problem{{Object: "bgppeer/x\ry", Reason: "bad\x1b]0;title\x07"}}}
	var b bytes.Buffer
	p.WriteText(&b)
	out := b.String()
	if strings.ContainsAny(out, "\x1b\r\x07") {
		t.Errorf("control characters printed raw:\n%q", out)
	}
	for _, want := range []string{`node node\x1b[2J:`, `bgppeer/a\nb`, `bgppeer/x\ry: bad\x1b]0;title\a`} {
		if !strings.Contains(out, want) {
			t.Errorf("plan text lacks %q:\n%s", want, out)
		}
	}
}
