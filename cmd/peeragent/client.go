package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
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

// errNotFound is an agent's 404.
var errNotFound = errors.New("not found")

// getJSON reads path from the agent at addr into v; what names it in
// errors ("read WHAT from ADDR: ...").
func getJSON(ctx context.Context, addr, path, what string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("read %s from %s: %w", what, addr, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return errNotFound
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("read %s from %s: %s", what, addr, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("read %s from %s: %w", what, addr, err)
	}
	return nil
}
