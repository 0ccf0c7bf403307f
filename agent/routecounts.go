package agent

import (
	"maps"
	"net/netip"
	"sync"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// routeCounts are the route figures of the metrics, kept up to date by
// the loop from each step's change of State (a structural diff of the
// learned best paths and of the route table: the cost of a step is that of
// what changed), so that a scrape reads them in O(neighbors), never walking
// the routes, and never asks the speaker to walk its Adj-RIBs (a scrape
// at 100,000 learned routes cost about a CPU-second when it did).
type routeCounts struct {
	mu sync.Mutex
	// learned counts, per neighbor, the learned prefixes whose best paths
	// (Inputs.Learned, docs/routes.md §9.1) include one of its paths.
	learned map[netip.Addr]int
	// table counts the route table's entries by phase (docs/routes.md
	// §9.7), indexed as tablePhases.
	table [numTablePhases]int
	// run batches the learned deltas of consecutive prefixes from the
	// same neighbor (a table comes in from few neighbors), so that most
	// prefixes cost no map update.
	run    netip.Addr
	runLen int
}

// numTablePhases is len(tablePhases) (metrics.go), as a constant.
const numTablePhases = 6

func newRouteCounts() *routeCounts {
	return &routeCounts{learned: map[netip.Addr]int{}}
}

// update takes the change from prev to next into the counts.
func (c *routeCounts) update(prev, next state.State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pmap.Diff(prev.Inputs.Learned, next.Inputs.Learned, samePtr[*state.BestPaths],
		func(_ string, old *state.BestPaths, hadOld bool, cur *state.BestPaths, hasCur bool) {
			if hadOld {
				c.addLearned(old, -1)
			}
			if hasCur {
				c.addLearned(cur, 1)
			}
		})
	c.flush()
	pmap.Diff(prev.Out.Routes, next.Out.Routes, samePtr[*state.TableRoute],
		func(_ string, old *state.TableRoute, hadOld bool, cur *state.TableRoute, hasCur bool) {
			if hadOld {
				c.addPhase(old.Phase, -1)
			}
			if hasCur {
				c.addPhase(cur.Phase, 1)
			}
		})
}

func (c *routeCounts) addPhase(p state.RoutePhase, d int) {
	for i, x := range tablePhases {
		if x == p {
			c.table[i] += d
			return
		}
	}
}

// addLearned counts b once for each neighbor among its paths.
func (c *routeCounts) addLearned(b *state.BestPaths, d int) {
	for i, p := range b.Paths {
		if !p.Neighbor.IsValid() || seenNeighbor(b.Paths[:i], p.Neighbor) {
			continue
		}
		if p.Neighbor != c.run {
			c.flush()
			c.run = p.Neighbor
		}
		c.runLen += d
	}
}

// flush applies the run of deltas batched for one neighbor.
func (c *routeCounts) flush() {
	if c.runLen != 0 {
		n := c.learned[c.run] + c.runLen
		if n == 0 {
			delete(c.learned, c.run)
		} else {
			c.learned[c.run] = n
		}
	}
	c.run, c.runLen = netip.Addr{}, 0
}

func seenNeighbor(paths []state.LearnedPath, a netip.Addr) bool {
	for _, p := range paths {
		if p.Neighbor == a {
			return true
		}
	}
	return false
}

func samePtr[T comparable](x, y T) bool { return x == y }

// snapshot copies the counts: per neighbor with learned routes, and per
// phase of the route table.
func (c *routeCounts) snapshot() (learned map[netip.Addr]int, table map[state.RoutePhase]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	table = make(map[state.RoutePhase]int, len(tablePhases))
	for i, p := range tablePhases {
		table[p] = c.table[i]
	}
	return maps.Clone(c.learned), table
}
