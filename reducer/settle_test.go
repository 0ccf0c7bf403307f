package reducer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// TestSettleCountIsPlain: the settle check's count (settleCount: the
// State's count brought up to date by what changed) decides what the plain
// walk over every neighbor decides (plainSettled, the check as it was), at
// every step of seeded random sequences that bring sessions up and down,
// send End-of-RIBs, restart the speaker, move the clock to the settle
// deadline and change the neighbors; and a step from the State with its
// count dropped (counted afresh) gives the same State and effects.
func TestSettleCountIsPlain(t *testing.T) {
	seqs, steps := 60, 150
	if testing.Short() || raceEnabled() {
		seqs = 15
	}
	var cover settleCover
	for seed := range uint64(seqs) {
		r := rand.New(rand.NewPCG(seed, 23))
		g := &gen{c: r, results: true}
		s := state.New(localNode, g.options())
		for i := range steps {
			a := settleAction(g, s, i)
			n := Reduce(s, a)
			dropped := s
			dropped.Routing.Settle = nil
			m := Reduce(dropped, a)
			if sn, sm := snapshot(n), snapshot(m); sn != sm {
				t.Fatalf("seed %d step %d %T: the State differs from one counted afresh:\n%s", seed, i, a, firstDiff(sn, sm))
			}
			if en, em := fmt.Sprint(effects.Diff(s, n)), fmt.Sprint(effects.Diff(s, m)); en != em {
				t.Fatalf("seed %d step %d %T: effects differ from a State counted afresh:\n%s\n%s", seed, i, a, en, em)
			}
			if err := checkSettleCount(n); err != "" {
				t.Fatalf("seed %d step %d %T: %s", seed, i, a, err)
			}
			cover.note(s, n)
			s = n
		}
	}
	if !cover.enough() {
		t.Fatalf("the sequences did not reach every case of the count: %+v", cover)
	}
}

// checkSettleCount compares what settled decides for s, from the count s
// carries and from a fresh count, with the plain walk.
func checkSettleCount(s state.State) string {
	wantOK, wantNext := plainSettled(s)
	if c := s.Routing.Settle; c != nil {
		fresh := countSettle(c.Neighbors, c.Sessions, c.EOR)
		if c.Pending != fresh.Pending || !slices.Equal(c.Restarts, fresh.Restarts) {
			return fmt.Sprintf("count %d %v, counted afresh %d %v", c.Pending, c.Restarts, fresh.Pending, fresh.Restarts)
		}
	}
	for _, cached := range []bool{true, false} {
		t := &tx{s: s}
		if !cached {
			t.s.Routing.Settle = nil
		}
		ok, next := t.settled()
		if ok != wantOK || !next.Equal(wantNext) {
			return fmt.Sprintf("settled (kept count: %v) %v %v, the plain walk %v %v", cached, ok, next, wantOK, wantNext)
		}
	}
	return ""
}

// settleAction is the i-th action: the gates opened with a few nodes
// first, then the generator's actions mixed with what settling reads.
func settleAction(g *gen, s state.State, i int) state.Action {
	at := time.Unix(1_700_000_000+int64(i), 0).UTC()
	switch {
	case i < len(state.SyncedKinds):
		a := state.SourceSynced{Kind: state.SyncedKinds[i]}
		switch a.Kind {
		case state.KindNode:
			for _, name := range nodeNames[:5] {
				a.Nodes = append(a.Nodes, g.node(name))
			}
		case state.KindBGPConfiguration:
			a.Configs = []state.BGPConfiguration{{Name: "default", ASNumber: 64512}}
		case state.KindBGPPeer:
			a.Peers = []state.BGPPeer{g.peer("peer-1"), g.peer("peer-2")}
		}
		return a
	case i == len(state.SyncedKinds):
		return state.RoutesListed{Dataplane: "linux"}
	case g.chance(35):
		return g.action(s)
	}
	var sessions []*state.Session
	s.Out.Sessions.Range(func(_ string, x *state.Session) bool { sessions = append(sessions, x); return true })
	if len(sessions) == 0 || g.chance(10) {
		return state.ServerApplied{Server: s.Server, At: at}
	}
	x := sessions[g.c.IntN(len(sessions))]
	switch g.c.IntN(6) {
	case 0:
		return state.PeerApplied{Address: x.Address, Gen: x.Gen, At: at}
	case 1, 2:
		gen := s.Routing.SpeakerGen
		if g.chance(10) {
			gen--
		}
		return state.EndOfRIBReceived{Gen: gen, Neighbor: x.Address, Family: g.pick("ipv4-unicast", "ipv6-unicast", "l3vpn-ipv6-unicast")}
	case 3:
		st := g.pick("established", "established", "active", "idle")
		return state.SessionStateChanged{Address: x.Address, State: st, At: at}
	default: // the alarm: at the deadline, just before it, or a restart time on
		due := s.Routing.SettleAt
		if due.IsZero() || g.chance(30) {
			due = s.Routing.Since.Add(time.Duration(g.c.IntN(200)) * time.Second)
		}
		return state.Tick{At: due.Add(time.Duration(g.c.IntN(3)-1) * time.Nanosecond)}
	}
}

// plainSettled is the settle check as a walk over every neighbor at
// every step (before the count): the reference the count must equal.
func plainSettled(s state.State) (ok bool, next time.Time) {
	r := s.Routing
	each := func(restartOver func(time.Duration) bool) bool {
		ok := true
		s.Out.Neighbors.Range(func(k string, n *state.Neighbor) bool {
			x, _ := s.Out.Sessions.Get(k)
			if !n.Active() || x == nil || x.Phase == state.PhaseFailed || x.Phase == state.PhaseWaiting {
				return true
			}
			if x.BGP != "established" {
				restart := time.Duration(n.GracefulRestartSeconds) * time.Second
				if restart == 0 {
					restart = 120 * time.Second
				}
				ok = restartOver(restart) && ok
				return true
			}
			for _, f := range n.Families {
				if ok && strings.HasSuffix(f, "-unicast") && !r.HasEOR(n.Address, f) {
					ok = false
				}
			}
			return true
		})
		return ok
	}
	if r.Since.IsZero() {
		return each(func(time.Duration) bool { return false }), time.Time{}
	}
	max := r.Since.Add(s.Options.RouteSettleMax.Duration)
	if !s.Now.Before(max) {
		return true, time.Time{}
	}
	next = max
	ok = each(func(restart time.Duration) bool {
		end := r.Since.Add(restart)
		if !s.Now.Before(end) {
			return true
		}
		if end.Before(next) {
			next = end
		}
		return false
	})
	return ok, next
}

// settleCover counts the steps that reached each case of the count, so
// that the test cannot pass without exercising it.
type settleCover struct {
	Counted, Pending, Restarts, Settled, Recounted, NewSpeaker int
}

func (c *settleCover) note(prev, next state.State) {
	if k := next.Routing.Settle; k != nil {
		c.Counted++
		if k.Pending > 0 {
			c.Pending++
		}
		if len(k.Restarts) > 0 {
			c.Restarts++
		}
		if p := prev.Routing.Settle; p != nil && p != k {
			c.Recounted++
		}
	}
	if next.Routing.Settled && !prev.Routing.Settled {
		c.Settled++
	}
	if next.Routing.SpeakerGen > prev.Routing.SpeakerGen && prev.Routing.SpeakerGen > 1 {
		c.NewSpeaker++
	}
}

func (c settleCover) enough() bool {
	return c.Counted >= 100 && c.Pending >= 20 && c.Restarts >= 20 && c.Settled >= 5 && c.Recounted >= 50 && c.NewSpeaker >= 1
}
