package e2e

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/state"
)

// TestPrefixLimitAgainstAgent attacks a running agent (the real loop over
// the real GoBGP executor) as a hostile BGPPeer: a GoBGP peer announces
// 20,000 /32s against a limit of 1,000 (docs/routes.md §9.9). The session
// is ended and held down, a problem names the neighbor, the agent keeps
// at most the limit and one UPDATE's routes, and its heap grows by at
// least 1 KB a refused route less than an agent whose limit lets them all
// in (BenchmarkLearnedHeap: about 1.5 KB a route).
func TestPrefixLimitAgainstAgent(t *testing.T) {
	const sent, limit, oneUpdate = 20_000, 1000, 820
	all := func() float64 { // the same peer against an agent taking it all
		base := heapAlloc()
		l, stop := learnedAgent(t, sent)
		defer stop()
		grown := float64(heapAlloc()) - float64(base)
		runtime.KeepAlive(l)
		return grown
	}()
	base := heapAlloc()
	l, stop := startLearnedAgent(t, sent, limit)
	defer stop()
	var problem string
	waitUntil(t, "a prefix-limit problem", 2*time.Minute, 100*time.Millisecond, func() bool {
		l.State().Out.Problems.Range(func(k string, ps []state.Problem) bool {
			if strings.HasPrefix(k, "prefixlimit/") && len(ps) > 0 {
				problem = ps[0].Object + ": " + ps[0].Reason
			}
			return problem == ""
		})
		return problem != ""
	})
	if !strings.Contains(problem, "bgppeer/tor") || !strings.Contains(problem, "127.0.0.2") {
		t.Errorf("problem %q does not name the neighbor", problem)
	}
	time.Sleep(3 * time.Second) // the peer keeps trying; nothing more may arrive
	s := l.State()
	x, _ := s.Out.Sessions.Get(state.AddrKey(mustAddr("127.0.0.2")))
	if x == nil || x.BGP == "established" {
		t.Errorf("session %+v, want held down", x)
	}
	learned := s.Inputs.Learned.Len()
	grown := float64(heapAlloc()) - float64(base)
	runtime.KeepAlive(l)
	t.Logf("%d sent, limit %d: %d learned, heap grew %.1f MiB (%.1f MiB without the limit; the peer's RIB of %d paths in both); problem %q",
		sent, limit, learned, grown/(1<<20), all/(1<<20), sent, problem)
	if learned > limit+oneUpdate {
		t.Errorf("%d routes learned, want at most the limit %d and one UPDATE's %d", learned, limit, oneUpdate)
	}
	if saved, want := all-grown, 1e3*float64(sent-limit-oneUpdate); saved < want {
		t.Errorf("the limit saved %.1f MiB of heap, want at least %.1f MiB", saved/(1<<20), want/(1<<20))
	}
}
