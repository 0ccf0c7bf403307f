package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// sysctlCmd raises numeric kernel settings to at least a value and never
// lowers them: `peeragent sysctl net.core.optmem_max=4194304`. It is the
// DaemonSet's init container (deploy/base/daemonset.yaml), run with the
// agent's own image so a cluster pulls one image only. Each setting's
// value afterwards is printed as `NAME = VALUE`.
func sysctlCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sysctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("proc-sys", "/proc/sys", "where the kernel's settings are (a directory tree of files, as /proc/sys)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: peeragent sysctl [--proc-sys DIR] NAME=MIN...\n\n"+
			"Raises each numeric setting NAME (dotted, as sysctl(8) names it) to MIN when it is lower;\n"+
			"never lowers one. Prints every setting's value afterwards.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("no NAME=MIN given")
	}
	var errs []error
	for _, arg := range fs.Args() {
		v, err := raiseSysctl(*root, arg)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(stdout, "%s = %d\n", strings.SplitN(arg, "=", 2)[0], v)
	}
	return errors.Join(errs...)
}

// raiseSysctl applies one NAME=MIN and returns the value read back.
func raiseSysctl(root, arg string) (int64, error) {
	name, minText, ok := strings.Cut(arg, "=")
	want, err := strconv.ParseInt(minText, 10, 64)
	if !ok || err != nil || want < 0 || !validSysctlName(name) {
		return 0, fmt.Errorf("%q: want NAME=MIN, NAME dotted (net.core.optmem_max), MIN a number >= 0", arg)
	}
	path := filepath.Join(root, filepath.FromSlash(strings.ReplaceAll(name, ".", "/")))
	cur, err := readSysctl(path)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	if cur >= want {
		return cur, nil
	}
	if err := os.WriteFile(path, []byte(strconv.FormatInt(want, 10)+"\n"), 0); err != nil {
		return 0, fmt.Errorf("%s: raise %d to %d: %w", name, cur, want, err)
	}
	got, err := readSysctl(path)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	if got < want {
		return got, fmt.Errorf("%s: wrote %d, reads back %d", name, want, got)
	}
	return got, nil
}

func readSysctl(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a single number: %q", strings.TrimSpace(string(b)))
	}
	return v, nil
}

// validSysctlName accepts dotted names of letters, digits, '_' and '-'
// only, so a name cannot leave the settings tree.
func validSysctlName(name string) bool {
	parts := strings.Split(name, ".")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			return false
		}
	}
	return true
}
