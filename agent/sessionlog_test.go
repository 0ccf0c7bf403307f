package agent

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/internal/testrig/logbuf"
	"github.com/peeragent/peeragent/state"
)

// At info, a session's line is logged when it reaches Established, when
// it leaves Established and whenever GoBGP gives a reason; the steps
// between (active, opensent, openconfirm, idle with no reason before the
// first Established) only at debug: thousands of lines at the start of a
// large mesh, one write each. Within one batch too: the state a session
// had before an action is the last one reported for it.
func TestSessionLogLevels(t *testing.T) {
	nb := netip.MustParseAddr("10.0.0.2")
	steps := []state.SessionStateChanged{
		{Address: nb, State: "active"},
		{Address: nb, State: "opensent"},
		{Address: nb, State: "openconfirm"},
		{Address: nb, State: "established"},
		{Address: nb, State: "active"}, // lost, no reason given
		{Address: nb, State: "opensent"},
		{Address: nb, State: "established"},
		{Address: nb, State: "idle", Reason: "graceful-restart"},
		{Address: nb, State: "idle"},
	}
	wantInfo := []string{"state=established", "state=active", "state=established", "state=idle reason=graceful-restart"}
	for _, batched := range []bool{false, true} {
		for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
			var buf logbuf.Buffer
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))
			// The loop's step, driven here with the speaker's results
			// reduced at once: no Run, no batching but the test's.
			l := NewLoop(LoopConfig{Initial: state.New("node-a", state.Options{}), Speaker: &fakeSpeaker{},
				Secrets: &fakeSecrets{watched: map[string]bool{}}, Log: log})
			drive := func(batch ...state.Action) {
				l.step(batch)
				for {
					select {
					case effs := <-l.work:
						l.pendingQ.Add(-1)
						if res := l.speaker.Execute(context.Background(), effs); len(res) > 0 {
							l.step(res)
						}
					default:
						return
					}
				}
			}
			drive(labActions()...)
			if x, ok := l.State().Out.Sessions.Get(state.AddrKey(nb)); !ok || x.Phase != state.PhaseConfigured {
				t.Fatalf("session of %s not configured: %+v", nb, x)
			}
			if batched {
				batch := make([]state.Action, len(steps))
				for i, s := range steps {
					batch[i] = s
				}
				drive(batch...)
			} else {
				for _, s := range steps {
					drive(s)
				}
			}
			var got []string
			for _, line := range buf.Lines() {
				if _, rest, ok := strings.Cut(line, "msg=session address=10.0.0.2 "); ok {
					got = append(got, strings.TrimSuffix(rest, ` reason=""`))
				}
			}
			want := wantInfo
			if level == slog.LevelDebug {
				want = nil
				for _, s := range steps {
					w := "state=" + s.State
					if s.Reason != "" {
						w += " reason=" + s.Reason
					}
					want = append(want, w)
				}
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("batched=%v, level %s: session lines\n%s\nwant\n%s", batched, level, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}

// The same within a batch of many sessions (past the short list the log
// keeps before it takes a map): each session's change is judged by the
// state last reported for it in the batch, and at warn no session line
// is logged.
func TestSessionLogLevelsLongBatch(t *testing.T) {
	var batch []state.Action
	var wantInfo, wantDebug []string
	for _, st := range []string{"established", "active", "opensent"} {
		for i := range 40 {
			addr := netip.AddrFrom4([4]byte{10, 0, 1, byte(i)})
			batch = append(batch, state.SessionStateChanged{Address: addr, State: st})
			line := "address=" + addr.String() + " state=" + st
			wantDebug = append(wantDebug, line)
			if st != "opensent" {
				wantInfo = append(wantInfo, line)
			}
		}
	}
	for _, tt := range []struct {
		level slog.Level
		want  []string
	}{{slog.LevelInfo, wantInfo}, {slog.LevelDebug, wantDebug}, {slog.LevelWarn, nil}} {
		var buf logbuf.Buffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tt.level}))
		logActions(log, state.New("node-a", state.Options{}), batch)
		var got []string
		for _, line := range buf.Lines() {
			if _, rest, ok := strings.Cut(line, "msg=session "); ok {
				got = append(got, strings.TrimSuffix(rest, ` reason=""`))
			}
		}
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("level %s: %d session lines, want %d:\n%s", tt.level, len(got), len(tt.want), strings.Join(got, "\n"))
		}
	}
}
