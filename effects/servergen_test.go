package effects

import (
	"net/netip"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// TestDiffServerCarriesSpeakerGen: StartServer and RestartServer carry the
// State's speaker generation, which their one-line form leaves out
// (docs/routes.md §9.1 rule 3).
func TestDiffServerCarriesSpeakerGen(t *testing.T) {
	prev := state.New("n", state.Options{})
	for _, k := range state.SyncedKinds {
		prev.Synced[k] = true
	}
	next := prev
	next.Server = state.Server{ASN: 64512, RouterID: netip.MustParseAddr("192.0.2.1"), ListenPort: 179}
	next.Routing.SpeakerGen = 3
	effs := Diff(prev, next)
	if len(effs) == 0 {
		t.Fatalf("no effects")
	}
	start, ok := effs[0].(StartServer)
	if !ok || start.Gen != 3 {
		t.Fatalf("first effect %#v, want a StartServer of generation 3", effs[0])
	}
	if s := start.String(); s != "start-server as=64512 router-id=192.0.2.1 listen-port=179" {
		t.Errorf("String %q shows more than the server", s)
	}
	moved := next
	moved.Server.ListenPort = 1179
	moved.Routing.SpeakerGen = 4
	restart, ok := Diff(next, moved)[0].(RestartServer)
	if !ok || restart.Gen != 4 {
		t.Errorf("restart %#v, want a RestartServer of generation 4", restart)
	}
}
