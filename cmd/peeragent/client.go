package main

import (
	"flag"
	"fmt"
	"io"
)

// clientFlags are the flags of the subcommands that read a running agent
// over HTTP (status, routes): its address and the output format.
type clientFlags struct {
	fs   *flag.FlagSet
	addr *string
	out  *string
}

func newClientFlags(name, usage, outHelp string, stderr io.Writer) clientFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := clientFlags{fs: fs,
		addr: fs.String("addr", "127.0.0.1:9179", "HTTP address of the running agent"),
		out:  fs.String("o", "text", outHelp),
	}
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	return c
}

// check applies the environment to the flags left unset and checks the
// output format; after the arguments are parsed.
func (c clientFlags) check() error {
	if err := applyEnv(c.fs); err != nil {
		return err
	}
	if *c.out != "text" && *c.out != "json" {
		return fmt.Errorf("-o %q: want text or json", *c.out)
	}
	return nil
}
