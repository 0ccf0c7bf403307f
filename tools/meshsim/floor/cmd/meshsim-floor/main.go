// Command meshsim-floor is the GoBGP floor speaker of one node of the mesh
// simulation (tools/meshsim, speaker "gobgp"; package floor says what it
// does and how it differs from the agent). meshsim builds it as it builds
// the agent (CGO_ENABLED=0, -trimpath, -s -w) and runs it in the node's
// namespace:
//
//	meshsim-floor -addr 10.200.0.1 -block 10.244.1.0/26 -pool 10.244.0.0/16 \
//	    -peers 10.200.0.2,10.200.0.3 -status established [-max-prefixes 0]
//
// (-peers-file FILE: more peers, one a line, as meshsim gives them.)
//
// GoBGP's log (Warn and above) goes to stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/tools/meshsim/floor"
)

func main() {
	var c floor.Config
	asn := flag.Uint("asn", 64512, "the cluster's AS")
	addr := flag.String("addr", "", "the node's address (router ID, listen and source address)")
	block := flag.String("block", "", "the node's pod block")
	pool := flag.String("pool", "", "the IPPool's CIDR")
	peers := flag.String("peers", "", "the other nodes' addresses, comma-separated")
	peersFile := flag.String("peers-file", "", "a file of more of the other nodes' addresses, one a line")
	maxp := flag.Uint("max-prefixes", state.DefaultMaxPrefixes, "each neighbor's prefix limit, as the agent's --max-prefixes; 0: none")
	flag.StringVar(&c.Status, "status", "", "file the number of Established sessions is written to")
	flag.Parse()
	var err error
	c.ASN, c.MaxPrefixes = uint32(*asn), uint32(*maxp)
	if c.Addr, err = netip.ParseAddr(*addr); err != nil {
		fatal(fmt.Errorf("-addr: %w", err))
	}
	if c.Block, err = netip.ParsePrefix(*block); err != nil {
		fatal(fmt.Errorf("-block: %w", err))
	}
	if c.Pool, err = netip.ParsePrefix(*pool); err != nil {
		fatal(fmt.Errorf("-pool: %w", err))
	}
	list := strings.Split(*peers, ",")
	if *peersFile != "" {
		raw, err := os.ReadFile(*peersFile)
		if err != nil {
			fatal(err)
		}
		list = append(list, strings.Split(string(raw), "\n")...)
	}
	for _, p := range list {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		a, err := netip.ParseAddr(p)
		if err != nil {
			fatal(fmt.Errorf("-peers: %w", err))
		}
		c.Peers = append(c.Peers, a)
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
