package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/state"
)

func routesCmd(args []string, stdout, stderr io.Writer) error {
	c := newClientFlags("routes", "Usage: peeragent routes [flags]\n\nThe route table: each prefix, its route, the neighbors it was learned from, its phase, and why it is not installed.",
		"output format: text or json (GET /routes as served)", stderr)
	if err := c.fs.Parse(args); err != nil {
		return err
	}
	if c.fs.NArg() > 0 {
		return fmt.Errorf("no arguments expected, got %q", c.fs.Args())
	}
	if err := c.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := fetchRoutes(ctx, *c.addr)
	if err != nil {
		return err
	}
	if *c.out == "json" {
		return writeIndented(stdout, rs)
	}
	WriteRoutes(stdout, rs)
	return nil
}

func fetchRoutes(ctx context.Context, addr string) ([]state.RouteView, error) {
	var rs []state.RouteView
	return rs, agent.Fetch(ctx, nil, addr, "/routes", &rs)
}

// WriteRoutes prints the route table for people: one line per prefix,
// then a count by phase.
func WriteRoutes(w io.Writer, rs []state.RouteView) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PREFIX\tROUTE\tLEARNED FROM\tORIGIN\tPHASE\tWHY NOT INSTALLED")
	phases := map[state.RoutePhase]int{}
	for _, r := range rs {
		if r.TableRoute == nil {
			continue
		}
		route := "-"
		if t := r.Target(); t != nil {
			route = strings.TrimPrefix(t.String(), t.Prefix.String()+" ")
			if !r.Wanted() {
				route += " (held)"
			}
		}
		phase := string(r.Phase)
		if phase == "" {
			phase = "-"
		}
		phases[r.Phase]++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Prefix, route, learnedFrom(r.Paths), printable(orDash(r.Origin)), phase, printable(orDash(whyNot(r))))
	}
	tw.Flush()
	var counts []string
	for _, p := range []state.RoutePhase{state.RoutePhaseApplied, state.RoutePhaseAdopted, state.RoutePhasePending,
		state.RoutePhaseFailed, state.RoutePhaseHeld, state.RoutePhaseSkipped} {
		if phases[p] > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", p, phases[p]))
		}
	}
	fmt.Fprintf(w, "\n%d routes", len(rs))
	if len(counts) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(counts, ", "))
	}
	fmt.Fprintln(w)
}

// learnedFrom lists the neighbors of a prefix's learned paths, each with
// its next hops when they differ from the neighbor's address.
func learnedFrom(paths []state.LearnedPath) string {
	var out []string
	for _, p := range paths {
		s := p.Neighbor.String()
		if !p.Neighbor.IsValid() {
			s = "?"
		}
		if len(p.NextHops) > 0 && (len(p.NextHops) > 1 || p.NextHops[0] != p.Neighbor) {
			hops := make([]string, len(p.NextHops))
			for i, a := range p.NextHops {
				hops[i] = a.String()
			}
			s += " (next hop " + strings.Join(hops, ",") + ")"
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ", ")
}

// whyNot is why the entry is not installed: the §9.2 reason, or the
// dataplane's last error.
func whyNot(r state.RouteView) string {
	switch {
	case r.NotInstalled != "":
		return r.NotInstalled
	case r.LastError != "":
		return fmt.Sprintf("%s (attempts %d)", r.LastError, r.Attempts)
	}
	return ""
}
