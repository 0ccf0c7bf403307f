package main

import (
	"context"
	"fmt"
	"net/netip"
)

// pathCounts is the speaker's count of paths advertised to and received
// from one neighbor (docs/routes.md §8.3 rule 11: what `to` promises, as
// the speaker has it).
type pathCounts struct {
	Advertised *uint64
	Received   uint64
}

// fetchPathCounts reads each neighbor's counts from GET /neighbors/ADDRESS
// (the speaker's view). A neighbor the speaker does not have, or cannot
// read, is left out; once the agent stops answering, the rest are too.
func fetchPathCounts(ctx context.Context, addr string, d statusDump) map[string]pathCounts {
	out := map[string]pathCounts{}
	for _, n := range d.Neighbors {
		a, err := netip.ParseAddr(n.Address)
		if err != nil {
			continue
		}
		nd, err := fetchNeighbor(ctx, addr, a)
		if ctx.Err() != nil {
			break
		}
		if err != nil || nd.Speaker == nil {
			continue
		}
		out[n.Address] = pathCounts{Advertised: nd.Speaker.Advertised, Received: nd.Speaker.Received}
	}
	return out
}

// countText is a count for the table: "-" when the speaker did not say.
func countText(c pathCounts, ok bool, advertised bool) string {
	switch {
	case !ok:
		return "-"
	case !advertised:
		return fmt.Sprint(c.Received)
	case c.Advertised == nil:
		return "-"
	}
	return fmt.Sprint(*c.Advertised)
}
