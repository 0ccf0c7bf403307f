package floor

import (
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"

	"github.com/peeragent/peeragent/state"
)

// ParseFlags reads the command line of meshsim-floor (without the
// program's name); Log is left nil.
func ParseFlags(args []string) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("meshsim-floor", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asn := fs.Uint("asn", 64512, "the cluster's AS")
	addr := fs.String("addr", "", "the node's address (router ID, listen and source address)")
	block := fs.String("block", "", "the node's pod block")
	pool := fs.String("pool", "", "the IPPool's CIDR")
	peers := fs.String("peers", "", "the other nodes' addresses, comma-separated")
	peersFile := fs.String("peers-file", "", "a file of more of the other nodes' addresses, one a line")
	maxp := fs.Uint("max-prefixes", state.DefaultMaxPrefixes, "each neighbor's prefix limit, as the agent's --max-prefixes; 0: none")
	fs.IntVar(&c.GCStartPercent, "gc-start-percent", 400, "the agent's --gc-start-percent: its start-phase GC policy; 0: Go's default GC")
	fs.StringVar(&c.HTTP, "http", "", "address whose /established serves the number of Established sessions")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	c.ASN, c.MaxPrefixes = uint32(*asn), uint32(*maxp)
	if c.Addr, err = netip.ParseAddr(*addr); err != nil {
		return c, fmt.Errorf("-addr: %w", err)
	}
	if c.Block, err = netip.ParsePrefix(*block); err != nil {
		return c, fmt.Errorf("-block: %w", err)
	}
	if c.Pool, err = netip.ParsePrefix(*pool); err != nil {
		return c, fmt.Errorf("-pool: %w", err)
	}
	list := strings.Split(*peers, ",")
	if *peersFile != "" {
		raw, err := os.ReadFile(*peersFile)
		if err != nil {
			return c, err
		}
		list = append(list, strings.Split(string(raw), "\n")...)
	}
	for _, p := range list {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		a, err := netip.ParseAddr(p)
		if err != nil {
			return c, fmt.Errorf("-peers: %w", err)
		}
		c.Peers = append(c.Peers, a)
	}
	return c, nil
}
