package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/peeragent/peeragent/internal/buildinfo"
)

// versionCmd prints which build this is: the version (-ldflags, else the
// module version, else devel), the VCS revision and time, and the Go
// toolchain.
func versionCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "text", "output format: text or json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	info := buildinfo.Read()
	switch *out {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	case "text":
		writeVersion(stdout, info)
		return nil
	}
	return fmt.Errorf("-o %q: want text or json", *out)
}

// writeVersion writes info as "peeragent VERSION" and one line per known
// fact; the first line alone is the version, for scripts.
func writeVersion(w io.Writer, info buildinfo.Info) {
	fmt.Fprintf(w, "peeragent %s\n", info.Version)
	if info.Revision != "" {
		rev := info.Revision
		if info.Modified {
			rev += " (modified)"
		}
		fmt.Fprintf(w, "  revision  %s\n", rev)
	}
	if info.Time != "" {
		fmt.Fprintf(w, "  time      %s\n", info.Time)
	}
	fmt.Fprintf(w, "  go        %s %s\n", info.GoVersion, info.Platform)
}
