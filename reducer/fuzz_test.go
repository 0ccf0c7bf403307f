package reducer

import (
	"fmt"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// maxFuzzActions bounds a fuzz input's sequence, so one input stays fast.
const maxFuzzActions = 150

// FuzzReduce reads the input as the generator's choices, one byte each:
// the first says whether executor and speaker results (peerApplied,
// peerApplyFailed, ticks, route results, sessionStateChanged, with
// generations taken from the current sessions) are mixed in, the next
// ones pick the options, then the actions, until the bytes run out. Every
// step must neither panic, modify its input nor leak a password; at the
// end the State must equal FromScratch over its objects, unless a neighbor
// keeps a last applied password (history no object holds).
//
// go test -run '^$' -fuzz FuzzReduce -fuzztime 3m ./reducer
func FuzzReduce(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01peeragent property seed corpus: mesh, peers, secrets and results"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &bytesChooser{b: data}
		g := &gen{c: c, results: c.IntN(2) == 1}
		opts := g.options()
		acts, fl := play(opts, func(i int, s state.State) (state.Action, bool) {
			if len(c.b) == 0 || i >= maxFuzzActions {
				return nil, false
			}
			return g.action(s), true
		}, g.results)
		if fl != nil {
			report(t, fmt.Sprintf("fuzz input %q", data), opts, acts, fl, g.results)
		}
	})
}
