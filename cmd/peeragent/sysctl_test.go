package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSysctl: a setting below MIN is raised, one at or above it is left
// alone (never lowered), and bad names or values are refused; the values
// afterwards are printed. A temp tree stands in for /proc/sys.
func TestSysctl(t *testing.T) {
	dir := t.TempDir()
	write := func(name, v string) {
		p := filepath.Join(dir, filepath.FromSlash(strings.ReplaceAll(name, ".", "/")))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(strings.ReplaceAll(name, ".", "/"))))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	write("net.core.optmem_max", "131072\n")
	write("net.core.somaxconn", "8388608\n")
	write("net.core.text", "a b\n")
	for _, tc := range []struct {
		name    string
		args    []string
		out     string
		errWant string
		values  map[string]string
	}{
		{name: "raises-a-lower-value", args: []string{"net.core.optmem_max=4194304"},
			out: "net.core.optmem_max = 4194304\n", values: map[string]string{"net.core.optmem_max": "4194304"}},
		{name: "never-lowers", args: []string{"net.core.somaxconn=4096"},
			out: "net.core.somaxconn = 8388608\n", values: map[string]string{"net.core.somaxconn": "8388608"}},
		{name: "missing-setting", args: []string{"net.core.nothere=1"}, errWant: "net.core.nothere"},
		{name: "not-a-number", args: []string{"net.core.text=1"}, errWant: "not a single number"},
		{name: "escaping-name", args: []string{"net.core..=1"}, errWant: "want NAME=MIN"},
		{name: "slash-in-name", args: []string{"net/../../etc.x=1"}, errWant: "want NAME=MIN"},
		{name: "negative", args: []string{"net.core.optmem_max=-1"}, errWant: "want NAME=MIN"},
		{name: "none", args: nil, errWant: "no NAME=MIN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := sysctlCmd(append([]string{"--proc-sys", dir}, tc.args...), &out, &errOut)
			if tc.errWant != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errWant) {
					t.Fatalf("err %v, want one containing %q", err, tc.errWant)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.out {
				t.Errorf("printed %q, want %q", out.String(), tc.out)
			}
			for name, want := range tc.values {
				if got := read(name); got != want {
					t.Errorf("%s = %s, want %s", name, got, want)
				}
			}
		})
	}
}
