package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/internal/buildinfo"
)

func TestVersionCommand(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		code     int
		contains string
	}{
		{"text", []string{"version"}, 0, "peeragent " + buildinfo.Read().Version + "\n"},
		{"text-go-line", []string{"version"}, 0, "  go        " + runtime.Version()},
		{"flag-form", []string{"--version"}, 0, "peeragent " + buildinfo.Read().Version + "\n"},
		{"json", []string{"version", "-o", "json"}, 0, `"goVersion": "` + runtime.Version() + `"`},
		{"bad-format", []string{"version", "-o", "yaml"}, 1, ""},
		{"extra-args", []string{"version", "now"}, 1, ""},
		{"in-usage", []string{"help"}, 0, "peeragent version"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := Main(c.args, &out, &errOut); code != c.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, c.code, errOut.String())
			}
			if !strings.Contains(out.String(), c.contains) {
				t.Errorf("output %q does not contain %q", out.String(), c.contains)
			}
		})
	}
}

func TestWriteVersion(t *testing.T) {
	var b bytes.Buffer
	writeVersion(&b, buildinfo.Info{Version: "v0.1.0", Revision: "0123abc", Time: "2025-11-30T12:00:00Z",
		Modified: true, GoVersion: "go1.26.8", Platform: "linux/amd64"})
	want := "peeragent v0.1.0\n" +
		"  revision  0123abc (modified)\n" +
		"  time      2025-11-30T12:00:00Z\n" +
		"  go        go1.26.8 linux/amd64\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// A binary built with -ldflags -X and run with `version` is tested by
// tools/image (TestImage), which builds the one the image holds.
