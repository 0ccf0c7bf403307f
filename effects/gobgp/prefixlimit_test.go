package gobgp

import (
	"fmt"
	"strings"
	"testing"

	api "github.com/osrg/gobgp/v4/api"

	"github.com/peeragent/peeragent/effects"
)

// TestPrefixLimitAttack: a peer announces more routes than the
// neighbor's limit (docs/routes.md §9.9). The agent's speaker ends the
// session with a Cease (maximum number of prefixes reached), reports a
// down reason naming the limit, and holds the session down. GoBGP counts
// after each UPDATE, and with graceful restart keeps what it took as
// stale for the restart time: at most the limit and one UPDATE's routes
// (about 800 IPv4 /32s in 4,096 bytes), not the 2,000 sent.
func TestPrefixLimitAttack(t *testing.T) {
	p := newPair(t)
	const limit = 50
	p.na.MaxPrefixes = limit
	p.start(t, effects.AddPeer{Neighbor: p.na, Gen: 1})
	m := p.a.events.mark()
	var prefixes []string
	const sent, oneUpdate = 2000, 820
	for i := range sent {
		prefixes = append(prefixes, fmt.Sprintf("10.77.%d.%d/32", i/256, i%256))
	}
	originate(t, p.b, prefixes...)
	p.a.events.waitState(t, p.b.addr, "idle", establishTimeout)
	var reason string
	for _, ev := range p.a.events.since(m, p.b.addr) {
		if ev.Reason != "" {
			reason = ev.Reason
		}
	}
	t.Logf("down reason: %q", reason)
	if !strings.Contains(reason, "prefix limit") {
		t.Errorf("down reason %q does not name the prefix limit; events: %s", reason, p.a.events.describe(p.b.addr))
	}
	n := len(tables(p.a, api.TableType_TABLE_TYPE_ADJ_IN)[p.b.addr])
	t.Logf("%d routes sent, limit %d: adj-in holds %d", sent, limit, n)
	if n > limit+oneUpdate {
		t.Errorf("adj-in holds %d routes, want at most the limit %d and one UPDATE's %d", n, limit, oneUpdate)
	}
	// Held down: no new session while the peer still has too many routes.
	if p.a.events.waitUntil(2*quietWindow, func() bool { return p.a.events.last(p.b.addr) == "established" }) {
		t.Errorf("session came back over the limit: %s", p.a.events.describe(p.b.addr))
	}
	// A higher limit releases it.
	raised := *p.na
	raised.MaxPrefixes = 5000
	mustApply(t, p.a.Executor, effects.UpdatePeer{Old: p.na, New: &raised, Gen: 2})
	p.a.events.waitState(t, p.b.addr, "established", establishTimeout)
}
