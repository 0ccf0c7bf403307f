package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/state"
)

// TestPrefixLimitAnnotationAgainstAgent attacks a running agent (the real
// loop over the real GoBGP executor) as a hostile BGPPeer whose annotation
// peeragent.io/max-prefixes is 500 while --max-prefixes is its default,
// 20,000: a GoBGP peer on 127.0.0.2 announces 3,000 /32s, which the flag
// alone would take (docs/routes.md §9.9). The limit trips at the
// annotation's value: the session is ended and held down, a problem names
// the BGPPeer, the neighbor and 500, and at most 500 routes and one
// UPDATE's are learned. An invalid annotation then is a problem naming it,
// and the neighbor falls back to the flag's limit in place: the speaker
// lets the peer connect again and all 3,000 routes are learned. Lowering
// the annotation to 1,000 under the 3,000 held trips the limit at once.
func TestPrefixLimitAnnotationAgainstAgent(t *testing.T) {
	const sent, limit, oneUpdate = 3000, 500, 820
	l, upsert, stop := annotatedLimitAgent(t, sent, "500")
	defer stop()
	peer := mustAddr("127.0.0.2")
	peak := peakLearned(l)
	problem := waitProblem(t, l, "prefixlimit/", "the annotation's limit")
	for _, want := range []string{"bgppeer/tor", "127.0.0.2", fmt.Sprintf("more than %d routes", limit)} {
		if !strings.Contains(problem, want) {
			t.Errorf("problem %q does not say %q", problem, want)
		}
	}
	time.Sleep(3 * time.Second) // the peer keeps trying; nothing more may arrive
	s := l.State()
	x, _ := s.Out.Sessions.Get(state.AddrKey(peer))
	n, _ := s.Out.Neighbors.Get(state.AddrKey(peer))
	learned := peak()
	t.Logf("annotation %d, flag %d: %d sent, at most %d learned at a time (%d now), session %s; problem %q",
		limit, state.DefaultMaxPrefixes, sent, learned, s.Inputs.Learned.Len(), x.BGP, problem)
	if x == nil || x.BGP == "established" || n.MaxPrefixes != limit {
		t.Errorf("session %+v neighbor maxPrefixes %d, want held down at %d", x, n.MaxPrefixes, limit)
	}
	if learned > limit+oneUpdate {
		t.Errorf("%d routes learned, want at most the annotation's %d and one UPDATE's %d", learned, limit, oneUpdate)
	}

	upsert("lots")
	bad := waitProblem(t, l, "peer/", "the invalid annotation's problem")
	if want := `bgppeer/tor: annotation peeragent.io/max-prefixes "lots" is not a whole number`; !strings.HasPrefix(bad, want) {
		t.Errorf("problem %q, want %q...", bad, want)
	}
	waitUntil(t, "the flag's limit: every route learned, the session established", time.Minute, 100*time.Millisecond, func() bool {
		s := l.State()
		x, _ := s.Out.Sessions.Get(state.AddrKey(peer))
		return x != nil && x.BGP == "established" && s.Inputs.Learned.Len() == sent
	})
	if n, _ := l.State().Out.Neighbors.Get(state.AddrKey(peer)); n.MaxPrefixes != state.DefaultMaxPrefixes {
		t.Errorf("neighbor maxPrefixes %d, want the flag's %d", n.MaxPrefixes, state.DefaultMaxPrefixes)
	}
	t.Logf("annotation %q: %q; all %d learned, established", "lots", bad, sent)

	upsert("1000")
	lowered := waitProblem(t, l, "prefixlimit/", "the lowered limit")
	if !strings.Contains(lowered, "more than 1000 routes") {
		t.Errorf("problem %q, want the lowered limit 1000", lowered)
	}
	x, _ = l.State().Out.Sessions.Get(state.AddrKey(peer))
	t.Logf("annotation lowered to 1000 under %d held: session %s, %q", sent, x.BGP, lowered)
}

// peakLearned samples the number of learned routes every 5 ms until the
// returned function is called, which gives the largest seen.
func peakLearned(l *agent.Loop) func() int {
	stop, done := make(chan struct{}), make(chan int)
	go func() {
		peak := 0
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, l.State().Inputs.Learned.Len())
			select {
			case <-stop:
				done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() int { close(stop); return <-done }
}

// waitProblem waits for a problem under a bucket starting with prefix and
// returns it as "object: reason".
func waitProblem(t *testing.T, l *agent.Loop, prefix, what string) string {
	t.Helper()
	var problem string
	waitUntil(t, what, 2*time.Minute, 100*time.Millisecond, func() bool {
		l.State().Out.Problems.Range(func(k string, ps []state.Problem) bool {
			if strings.HasPrefix(k, prefix) && len(ps) > 0 {
				problem = ps[0].Object + ": " + ps[0].Reason
			}
			return problem == ""
		})
		return problem != ""
	})
	return problem
}

// annotatedLimitAgent is startPeerAgent's agent and peer with the flag's
// default limit and the BGPPeer "tor" annotated with maxPrefixes; upsert
// annotates it anew.
func annotatedLimitAgent(t *testing.T, n int, maxPrefixes string) (*agent.Loop, func(string), func()) {
	ann := func(v string) map[string]string { return map[string]string{state.AnnotationMaxPrefixes: v} }
	l, upsert, stop := startPeerAgent(t, n, 0, ann(maxPrefixes))
	return l, func(v string) { upsert(ann(v)) }, stop
}
