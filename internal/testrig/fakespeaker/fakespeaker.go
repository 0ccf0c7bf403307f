// Package fakespeaker is a speaker executor for tests that run the agent's
// loop without GoBGP: it confirms every speaker effect at once, as a
// speaker whose every call succeeds would.
package fakespeaker

import (
	"context"
	"net/netip"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// Speaker is an effects.Executor that confirms every effect (Ack).
type Speaker struct{}

// Execute confirms effs (Ack).
func (Speaker) Execute(_ context.Context, effs []effects.Effect) []state.Action {
	return Ack(effs)
}

// Ack is the results a speaker whose every call succeeds reports for
// effs: the server applied for a start, restart or stop, and each
// neighbor's calls applied once per generation.
func Ack(effs []effects.Effect) []state.Action {
	type key struct {
		addr netip.Addr
		gen  uint64
	}
	var out []state.Action
	done := map[key]bool{}
	for _, e := range effs {
		switch e := e.(type) {
		case effects.StartServer:
			out = append(out, state.ServerApplied{Server: e.Server})
			continue
		case effects.RestartServer:
			out = append(out, state.ServerApplied{Server: e.New})
			continue
		case effects.StopServer:
			out = append(out, state.ServerApplied{})
			continue
		}
		r := e.Ref()
		if k := (key{r.Addr, r.Gen}); r.Kind.Peer() && !done[k] {
			done[k] = true
			out = append(out, state.PeerApplied{Address: k.addr, Gen: k.gen})
		}
	}
	return out
}
