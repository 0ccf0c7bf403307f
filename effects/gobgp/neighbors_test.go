package gobgp

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// Neighbors is GoBGP's own list: empty before the server starts, then what
// was added (sorted, the password as its fingerprint only), then what is
// left after a delete.
func TestNeighborsListsTheSpeakersPeers(t *testing.T) {
	sp := newSpeaker(t, "127.0.0.1")
	ctx := context.Background()
	if ns, err := sp.Neighbors(ctx); err != nil || len(ns) != 0 {
		t.Fatalf("before start: %v, %v; want none", ns, err)
	}
	const secret = "neighbors-secret"
	n1, n2 := passiveNeighbor("10.0.0.3", 64514), passiveNeighbor("10.0.0.2", 64513)
	n1.Password = state.NewPassword(secret)
	mustApply(t, sp.Executor, effects.StartServer{Server: sp.server(64512)},
		effects.AddPeer{Neighbor: n1, Gen: 1}, effects.AddPeer{Neighbor: n2, Gen: 2})
	ns, err := sp.Neighbors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%+v", ns)
	want := []Neighbor{
		{Address: n2.Address, PeerASN: 64513, LocalASN: 64512, Port: 179, Passive: true},
		{Address: n1.Address, PeerASN: 64514, LocalASN: 64512, Port: 179, Passive: true, Password: n1.Password.Fingerprint()},
	}
	if len(ns) != 2 || ns[0].Session == "" || strings.Contains(got, secret) {
		t.Fatalf("neighbors %s: want two with a session state and no password text", got)
	}
	for i := range ns {
		ns[i].Session = ""
	}
	if fmt.Sprintf("%+v", ns) != fmt.Sprintf("%+v", want) {
		t.Errorf("neighbors\n got %+v\nwant %+v", ns, want)
	}
	mustApply(t, sp.Executor, effects.DeletePeer{Addr: n1.Address, Gen: 3})
	if ns, err := sp.Neighbors(ctx); err != nil || len(ns) != 1 || ns[0].Address != n2.Address {
		t.Errorf("after deleting %s: %+v, %v", n1.Address, ns, err)
	}
}
