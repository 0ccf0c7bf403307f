// Command meshsim-floor is the GoBGP floor speaker of one node of the mesh
// simulation (tools/meshsim, speaker "gobgp"; package floor says what it
// does and how it differs from the agent). meshsim builds it as it builds
// the agent (CGO_ENABLED=0, -trimpath, -s -w) and runs it in the node's
// namespace:
//
//	meshsim-floor -addr 10.200.0.1 -block 10.244.1.0/26 -pool 10.244.0.0/16 \
//	    -peers 10.200.0.2,10.200.0.3 -http 10.200.0.1:9179 [-max-prefixes 0]
//
// (-peers-file FILE: more peers, one a line, as meshsim gives them;
// -asn: 64512 by default.) GoBGP's log (Warn and above) goes to stderr.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/peeragent/peeragent/tools/meshsim/floor"
)

func main() {
	c, err := floor.ParseFlags(os.Args[1:])
	if err != nil {
		fatal(err)
	}
	c.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := floor.Run(ctx, c); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "meshsim-floor:", err)
	os.Exit(1)
}
