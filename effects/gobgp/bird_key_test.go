package gobgp

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	birdtest "github.com/peeragent/peeragent/internal/testrig/bird"
	"github.com/peeragent/peeragent/state"
)

// TestBirdOverLongPasswordNeverEstablishes: BIRD has no password, and the
// agent's BGPPeer for it takes an 81-byte one from a Secret. GoBGP would
// only log that the kernel refused the key and bring the session up
// unauthenticated; here the neighbor is held back (docs/semantics.md §4),
// BIRD's connection attempts find no neighbor, neither side is ever
// Established, and the /state dump says why without the password.
func TestBirdOverLongPasswordNeverEstablishes(t *testing.T) {
	key := strings.Repeat("L", 81)
	birdtest.Require(t)
	const birdAddr = "127.0.0.35"
	requireLoopback(t, birdAddr)
	addr := netip.MustParseAddr(birdAddr)
	r := &birdRig{sp: newSpeaker(t, ourAddr)}
	r.peer = netip.AddrPortFrom(addr, uint16(birdtest.FreePort(t, addr)))
	r.cfg = birdtest.Config{Address: addr, Port: int(r.peer.Port()), AS: birdAS, Neighbors: []birdtest.Neighbor{{
		Name: birdProto, Address: netip.MustParseAddr(ourAddr), Port: int(r.sp.port), AS: ourAS,
	}}}
	r.bird = birdtest.Start(t, r.cfg)
	r.ag = newBirdAgent(t, r.sp)
	r.ag.setSecret(birdSecret, key)
	for _, a := range r.inputs(true) {
		r.ag.dispatch(t, a)
	}

	// BIRD dials us (after about 1 s) and is turned away, and again.
	ctx, cancel := context.WithTimeout(context.Background(), establishTimeout)
	defer cancel()
	seen, err := r.bird.WaitProtocol(ctx, birdProto, func(p birdtest.ProtocolState) bool { return p.LastError != "" })
	if err != nil {
		t.Fatalf("BIRD never tried us: %v", err)
	}
	if r.sp.events.waitUntil(quietWindow, func() bool { return r.sp.events.last(birdAddr) == "established" }) {
		t.Fatalf("our speaker reached Established with a peer without a password: %s", r.describe())
	}
	p, err := r.bird.Protocol(birdProto)
	if err != nil {
		t.Fatal(err)
	}
	if p.Established() || r.bird.Establishments(birdProto) != 0 {
		t.Fatalf("BIRD without a password is Established: %s", p)
	}
	s := r.session()
	if s.Phase == state.PhaseEstablished || s.Applied != nil {
		t.Errorf("our session: %s", r.describe())
	}

	r.ag.mu.Lock()
	dump, err := json.Marshal(r.ag.s.Dump())
	r.ag.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	text := string(dump)
	if !strings.Contains(text, "81 bytes long, more than the 80 a TCP-MD5 key may have") || !strings.Contains(text, "bgppeer/"+birdPeer) {
		t.Errorf("/state does not say why: %s", text)
	}
	if strings.Contains(text, key) || strings.Contains(r.sp.logs.String(), key) {
		t.Errorf("the password reached /state or the logs")
	}
	t.Logf("BIRD after %v of quiet: %s (last error %q; first seen %q); our session: phase %q; problems: %v",
		quietWindow, p, p.LastError, seen.LastError, s.Phase, r.ag.s.AllProblems())
}
