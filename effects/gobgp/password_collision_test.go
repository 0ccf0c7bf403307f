package gobgp

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/fpcollide"
	"github.com/peeragent/peeragent/state"
)

// TestPairPasswordRotationSameFingerprint: a rotation to a TCP-MD5 key
// whose 32-bit fingerprint equals the old key's is applied like any other:
// the update resets the session with the reason "reconfigured: password",
// the speaker holds the new key (compared by value), the session comes
// back with the peer that has only the new key, and neither key reaches a
// log (docs/semantics.md §4).
func TestPairPasswordRotationSameFingerprint(t *testing.T) {
	first, second := fpcollide.ForTest(t, []byte("pair-collision-key"), "md5-collide-")
	if state.NewPassword(first).Fingerprint() != state.NewPassword(second).Fingerprint() {
		t.Fatal("no collision")
	}
	p := newPair(t)
	p.na.Password, p.nb.Password = state.NewPassword(first), state.NewPassword(first)
	p.start(t, effects.AddPeer{Neighbor: p.na, Gen: 1})

	ma := p.a.events.mark()
	na2, nb2 := *p.na, *p.nb
	na2.Password, nb2.Password = state.NewPassword(second), state.NewPassword(second)
	ca, ra := effects.Classify(p.na, &na2)
	cb, rb := effects.Classify(p.nb, &nb2)
	ua := effects.UpdatePeer{Old: p.na, New: &na2, Gen: 2, Changes: ca, Reset: ra}
	mustApply(t, p.a.Executor, ua)
	mustApply(t, p.b.Executor, effects.UpdatePeer{Old: p.nb, New: &nb2, Gen: 2, Changes: cb, Reset: rb})
	p.a.events.waitBounce(t, ma, p.b.addr, establishTimeout)
	p.waitEstablished(t)
	evs := p.a.events.since(ma, p.b.addr)
	t.Logf("effect %s; session on %s: %s", ua, p.a.addr, p.a.events.describe(p.b.addr))
	if evs[0].Reason != "reconfigured: password" {
		t.Errorf("the session went %s with reason %q, want \"reconfigured: password\"", evs[0].State, evs[0].Reason)
	}
	peer, ok, err := currentPeer(context.Background(), p.a.bgp, netip.MustParseAddr(p.b.addr))
	if err != nil || !ok || peer.GetConf().GetAuthPassword() != second {
		t.Errorf("the speaker does not hold the new key (found %v, %v)", ok, err)
	}
	for _, sp := range []*speaker{p.a, p.b} {
		if logs := sp.logs.String(); strings.Contains(logs, first) || strings.Contains(logs, second) {
			t.Errorf("a password reached the logs of %s", sp.addr)
		}
	}
}
