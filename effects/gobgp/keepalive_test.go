package gobgp

import (
	"context"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
)

// TestPairKeepaliveChangeReachesTheSession: a keepalive interval change
// (BGPPeer keepaliveTime, docs/semantics.md §3) takes effect on the
// session, not only in GoBGP's config: the executor re-adds the peer (one
// session reset, docs/gobgp-updates.md), and the new session keeps alive
// at the new interval (ListPeer's Timers.State, which GoBGP's keepalive
// ticker reads). GoBGP's UpdatePeer alone left the running session at 30 s
// (TestMeasureUpdateResets).
func TestPairKeepaliveChangeReachesTheSession(t *testing.T) {
	p := newPair(t)
	p.start(t, effects.AddPeer{Neighbor: p.na, Gen: 1})
	live := func() uint64 {
		cur, ok, err := p.a.currentPeer(context.Background(), p.na.Address)
		if err != nil || !ok {
			t.Fatalf("ListPeer: %v, found %v", err, ok)
		}
		return cur.GetTimers().GetState().GetKeepaliveInterval()
	}
	if got := live(); got != 30 {
		t.Fatalf("keepalive of the first session %d s, want GoBGP's 30 s", got)
	}
	ma := p.a.events.mark()
	na2 := *p.na
	na2.KeepaliveSeconds = 7
	ch, reset := effects.Classify(p.na, &na2)
	mustApply(t, p.a.Executor, effects.UpdatePeer{Old: p.na, New: &na2, Gen: 2, Changes: ch, Reset: reset})
	p.a.events.waitBounce(t, ma, p.b.addr, establishTimeout)
	p.waitEstablished(t)
	if !pollUntil(5*time.Second, func() bool { return live() == 7 }) {
		t.Errorf("keepalive of the new session %d s, want 7 s", live())
	}
	t.Logf("session actions on %s: %s", p.a.addr, p.a.events.describe(p.b.addr))
}
