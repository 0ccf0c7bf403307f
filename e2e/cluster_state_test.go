package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/peeragent/peeragent/state"
)

// clusterNbr is one expected neighbor. pw is the password text from the
// test's Secret; only its fingerprint is compared.
type clusterNbr struct {
	addr   string
	asn    uint32
	local  uint32
	origin string
	pw     string
	wait   bool // held back for its Secret
}

func (n clusterNbr) stateLine() string {
	l := fmt.Sprintf("%s as=%d local=%d %s", n.addr, n.asn, n.local, n.origin)
	if n.pw != "" {
		l += " pw=" + state.NewPassword(n.pw).Fingerprint()
	}
	if n.wait {
		l += " waiting"
	}
	return l
}

func (n clusterNbr) speakerLine() string {
	l := fmt.Sprintf("%s as=%d local=%d", n.addr, n.asn, n.local)
	if n.pw != "" {
		l += " pw=" + state.NewPassword(n.pw).Fingerprint()
	}
	return l
}

func clusterWantState(want []clusterNbr) []string {
	out := []string{}
	for _, n := range want {
		out = append(out, n.stateLine())
	}
	slices.Sort(out)
	return out
}

func clusterWantSpeaker(want []clusterNbr) []string {
	out := []string{}
	for _, n := range want {
		if !n.wait {
			out = append(out, n.speakerLine())
		}
	}
	slices.Sort(out)
	return out
}

// clusterStateLines renders the State's neighbors as stateLine does.
func clusterStateLines(s state.State) []string {
	out := []string{}
	s.Out.Neighbors.Range(func(_ string, n *state.Neighbor) bool {
		l := fmt.Sprintf("%s as=%d local=%d %s", n.Address, n.PeerASN, n.LocalASN, n.Origin)
		if fp := n.Password.Fingerprint(); fp != "" {
			l += " pw=" + fp
		}
		if n.Waiting != "" {
			l += " waiting"
		}
		out = append(out, l)
		return true
	})
	slices.Sort(out)
	return out
}

// speakerLines renders GoBGP's own neighbor list as speakerLine does.
func (a *clusterAgent) speakerLines() ([]string, error) {
	ns, err := a.bgp.Neighbors(a.e.ctx)
	out := []string{}
	for _, n := range ns {
		l := fmt.Sprintf("%s as=%d local=%d", n.Address, n.PeerASN, n.LocalASN)
		if n.Password != "" {
			l += " pw=" + n.Password
		}
		out = append(out, l)
	}
	slices.Sort(out)
	return out, err
}

// clusterSessionsMatch checks that every neighbor has its session in the right
// phase (waiting when held back, else configured or established with the
// current config confirmed by the executor) and that no other session is
// left.
func clusterSessionsMatch(s state.State) (bool, string) {
	ok := s.Out.Sessions.Len() == s.Out.Neighbors.Len()
	var parts []string
	s.Out.Sessions.Range(func(k string, sess *state.Session) bool {
		n, has := s.Out.Neighbors.Get(k)
		switch {
		case !has:
			ok = false
		case n.Waiting != "":
			ok = ok && sess.Phase == state.PhaseWaiting
		default:
			ok = ok && (sess.Phase == state.PhaseConfigured || sess.Phase == state.PhaseEstablished) &&
				sess.Applied != nil && sess.Applied.Equal(n)
		}
		parts = append(parts, fmt.Sprintf("%s %s/%s", sess.Address, sess.Phase, sess.BGP))
		return true
	})
	slices.Sort(parts)
	return ok, strings.Join(parts, ", ")
}

// converge waits until the State (server AS, neighbors, sessions) and, with
// the real executor, GoBGP's neighbor list are want, then settles.
func (a *clusterAgent) converge(what string, serverASN uint32, want ...clusterNbr) {
	a.t.Helper()
	wantState, wantSpeaker := clusterWantState(want), clusterWantSpeaker(want)
	var last string
	ok := clusterPoll(a.e.ctx, clusterWaitMax, func() bool {
		s := a.loop.State()
		gotState := clusterStateLines(s)
		sessOK, sessions := clusterSessionsMatch(s)
		good := a.loop.Ready() && s.Server.ASN == serverASN && slices.Equal(gotState, wantState) && sessOK
		last = fmt.Sprintf("ready %v, server AS %d (want %d)\n  state neighbors %q\n  want            %q\n  sessions %s",
			a.loop.Ready(), s.Server.ASN, serverASN, gotState, wantState, sessions)
		if a.bgp != nil {
			got, err := a.speakerLines()
			good = good && err == nil && slices.Equal(got, wantSpeaker)
			last += fmt.Sprintf("\n  GoBGP neighbors %q (err %v)\n  want            %q", got, err, wantSpeaker)
		}
		return good
	})
	if !ok {
		a.alive()
		a.t.Fatalf("%s: the agent did not follow within %v:\n%s\n  problems %v", what, clusterWaitMax, last, a.problems())
	}
	a.settle()
}

// initial converges on the agent's first lists and logs how long that
// took from its start and what it handed the executor.
func (a *clusterAgent) initial(what string, serverASN uint32, want ...clusterNbr) {
	a.t.Helper()
	a.converge(what, serverASN, want...)
	effs := a.speaker.strings(0)
	a.t.Logf("%s: the agent matched %d neighbors %v after its start; %d speaker effects: %s", what, len(want),
		time.Since(a.started).Round(time.Millisecond), len(effs), clusterOrNone(effs))
}

// step makes a change through the API server, waits until the agent
// follows (converge) and returns the speaker effects the change caused.
func (a *clusterAgent) step(what string, change func(), serverASN uint32, want ...clusterNbr) []string {
	a.t.Helper()
	a.settle()
	m := a.speaker.mark()
	t0 := time.Now()
	change()
	a.converge(what, serverASN, want...)
	effs := a.speaker.strings(m)
	view := "State"
	if a.bgp != nil {
		view = "State and GoBGP"
	}
	a.t.Logf("%s: %s followed in %v; %d speaker effects: %s", what, view, time.Since(t0).Round(time.Millisecond),
		len(effs), clusterOrNone(effs))
	return effs
}

// stepInputs is step for a change that moves no neighbor: it waits until
// the State's inputs show it (cond), then returns the effects it caused.
func (a *clusterAgent) stepInputs(what string, change func(), cond func(state.State) bool) []string {
	a.t.Helper()
	a.settle()
	m := a.speaker.mark()
	t0 := time.Now()
	change()
	a.waitState(what, cond)
	a.settle()
	effs := a.speaker.strings(m)
	a.t.Logf("%s: arrived in %v; %d speaker effects: %s", what, time.Since(t0).Round(time.Millisecond), len(effs), clusterOrNone(effs))
	return effs
}

// waitState waits until cond holds for the State.
func (a *clusterAgent) waitState(what string, cond func(state.State) bool) {
	a.t.Helper()
	if !clusterPoll(a.e.ctx, clusterWaitMax, func() bool { return cond(a.loop.State()) }) {
		a.alive()
		a.t.Fatalf("%s: not in the State within %v; neighbors %q, problems %v", what, clusterWaitMax,
			clusterStateLines(a.loop.State()), a.problems())
	}
}

// same checks that neighbors, sessions and GoBGP's list are still want,
// with the same generations and flaps as at before.
func (a *clusterAgent) same(what string, before clusterSnapshot, want ...clusterNbr) {
	a.t.Helper()
	s := a.loop.State()
	if got := clusterStateLines(s); !slices.Equal(got, clusterWantState(want)) {
		a.t.Errorf("%s: neighbors %q, want %q", what, got, clusterWantState(want))
	}
	if got := clusterSessionGens(s); !maps.Equal(got, before.gens) {
		a.t.Errorf("%s: session generations/flaps %v, before %v", what, got, before.gens)
	}
	if a.bgp != nil {
		if got, err := a.speakerLines(); err != nil || !slices.Equal(got, clusterWantSpeaker(want)) {
			a.t.Errorf("%s: GoBGP neighbors %q (%v), want %q", what, got, err, clusterWantSpeaker(want))
		}
	}
}

func (a *clusterAgent) problems() []state.Problem { return a.loop.State().AllProblems() }

// hasProblem reports whether a problem's reason contains text.
func (a *clusterAgent) hasProblem(text string) bool {
	for _, p := range a.problems() {
		if strings.Contains(p.Reason, text) {
			return true
		}
	}
	return false
}

// clusterSnapshot counts what the agent did up to a moment.
type clusterSnapshot struct {
	effects, watchCalls int
	actions             map[string]int
	gens                map[string]string
}

func (a *clusterAgent) snapshot() clusterSnapshot {
	return clusterSnapshot{effects: a.speaker.mark(), watchCalls: len(a.watches.list()),
		actions: a.actions(), gens: clusterSessionGens(a.loop.State())}
}

type clusterDelta struct {
	effects, watchCalls int
	actions             map[string]int
}

func (s clusterSnapshot) since(b clusterSnapshot) clusterDelta {
	d := clusterDelta{effects: s.effects - b.effects, watchCalls: s.watchCalls - b.watchCalls, actions: map[string]int{}}
	for k, v := range s.actions {
		if n := v - b.actions[k]; n != 0 {
			d.actions[k] = n
		}
	}
	return d
}

func (d clusterDelta) String() string {
	keys := slices.Sorted(maps.Keys(d.actions))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, d.actions[k])
	}
	return fmt.Sprintf("%d speaker effects, %d secret watch calls; actions reduced: %s",
		d.effects, d.watchCalls, clusterOrNone(parts))
}

// clusterSessionGens is each session's generation and flap count.
func clusterSessionGens(s state.State) map[string]string {
	out := map[string]string{}
	s.Out.Sessions.Range(func(k string, sess *state.Session) bool {
		out[k] = fmt.Sprintf("gen %d flaps %d", sess.Gen, sess.Flaps)
		return true
	})
	return out
}
