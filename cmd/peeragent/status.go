package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/peeragent/peeragent/agent"
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
	return d, agent.Fetch(ctx, nil, addr, "/state", &d)
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
	writeProblems(w, d.Problems)
}

// writeProblems is the problems section of the plan and the status.
func writeProblems(w io.Writer, problems []state.Problem) {
	fmt.Fprintf(w, "\nproblems (%d):\n", len(problems))
	for _, p := range problems {
		fmt.Fprintf(w, "  %s: %s\n", printable(p.Object), printable(p.Reason))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
