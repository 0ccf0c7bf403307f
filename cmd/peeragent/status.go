package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/peeragent/peeragent/state"
)

// statusDump is the part of /state that status shows. Passwords stay the
// fingerprint strings the agent served (decoding them as state.Password
// would fingerprint the fingerprint).
type statusDump struct {
	Node      string           `json:"node"`
	Server    state.Server     `json:"server"`
	Neighbors []statusNeighbor `json:"neighbors"`
	Sessions  []*state.Session `json:"sessions"`
	Problems  []state.Problem  `json:"problems"`
	// Advertised are the own paths (docs/routes.md §8.1); status counts them.
	Advertised []json.RawMessage `json:"advertised"`
	// Routes is the route table; status shows each neighbor's host route
	// (its reachableBy route, docs/routes.md §9.7 rule 3).
	Routes []*state.TableRoute `json:"routes"`
	// counts are the speaker's per-neighbor path counts, by address (not
	// part of /state: read from GET /neighbors/ADDRESS).
	counts map[string]pathCounts
}

type statusNeighbor struct {
	Address  string `json:"address"`
	PeerASN  uint32 `json:"peerASN"`
	Origin   string `json:"origin"`
	Password string `json:"password"`
	Waiting  string `json:"waiting"`
}

// fetchState reads a running agent's /state.
func fetchState(ctx context.Context, addr string) (statusDump, error) {
	var d statusDump
	err := getJSON(ctx, addr, "/state", "state", &d)
	if errors.Is(err, errNotFound) {
		return d, fmt.Errorf("read state from %s: 404 Not Found", addr)
	}
	return d, err
}

// WriteStatus prints the neighbors table, then the problems.
func WriteStatus(w io.Writer, d statusDump, now time.Time) {
	sessions := map[string]*state.Session{}
	for _, s := range d.Sessions {
		sessions[s.Address.String()] = s
	}
	fmt.Fprintf(w, "node %s: AS %d, router ID %s, listen port %d, own paths %d\n\n", printable(d.Node), d.Server.ASN, addrText(d.Server.RouterID), d.Server.ListenPort, len(d.Advertised))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ADDRESS\tAS\tORIGIN\tPHASE\tBGP\tSINCE\tFLAPS\tLAST DOWN\tADVERTISED\tRECEIVED\tPASSWORD")
	for _, n := range d.Neighbors {
		phase, bgp, since, flaps, down := "-", "-", "-", 0, "-"
		if s := sessions[n.Address]; s != nil {
			phase, flaps, bgp = s.Phase.String(), s.Flaps, orDash(s.BGP)
			if !s.Since.IsZero() {
				since = now.Sub(s.Since).Round(time.Second).String()
			}
			if s.LastDownReason != "" {
				down = s.LastDownReason
			}
		}
		if n.Waiting != "" {
			phase = "waiting"
		}
		c, ok := d.counts[n.Address]
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", n.Address, n.PeerASN, printable(n.Origin), phase, bgp, since, flaps, printable(down),
			countText(c, ok, true), countText(c, ok, false), orDash(n.Password))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nproblems (%d):\n", len(d.Problems))
	for _, p := range d.Problems {
		fmt.Fprintf(w, "  %s: %s\n", printable(p.Object), printable(p.Reason))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
