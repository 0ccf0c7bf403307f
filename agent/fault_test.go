package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// flakySpeaker fails the first `failures` batches for each address, then
// behaves like fakeSpeaker: the executor wrapper that injects faults.
type flakySpeaker struct {
	fakeSpeaker
	mu       sync.Mutex
	failures int
	failed   map[string]int
}

func (f *flakySpeaker) Execute(ctx context.Context, effs []effects.Effect) []state.Action {
	var pass []effects.Effect
	var out []state.Action
	f.mu.Lock()
	for _, e := range effs {
		add, ok := e.(effects.AddPeer)
		k := e.Address().String()
		if ok && f.failed[k] < f.failures {
			f.failed[k]++
			out = append(out, state.PeerApplyFailed{Address: add.Neighbor.Address, Gen: add.Gen, At: time.Now(),
				Error: fmt.Sprintf("add peer %s (AS %d): %v", k, add.Neighbor.PeerASN, errors.New("injected fault"))})
			continue
		}
		pass = append(pass, e)
	}
	f.mu.Unlock()
	return append(out, f.fakeSpeaker.Execute(ctx, pass)...)
}

func TestFailedCallsAreRetriedUntilApplied(t *testing.T) {
	sp := &flakySpeaker{failures: 3, failed: map[string]int{}}
	l := runLoop(t, LoopConfig{Initial: state.New("node-a", state.Options{}), Speaker: sp,
		Secrets: &fakeSecrets{watched: map[string]bool{}}, Log: discardLogger()})
	srv := httptest.NewServer(Handler(l))
	defer srv.Close()

	for _, a := range labActions() {
		l.Dispatch(a)
	}
	sawFailure := false
	waitFor(t, "every neighbor configured after its retries", func() bool {
		configured := 0
		l.State().Out.Sessions.Range(func(_ string, s *state.Session) bool {
			if s.Phase == state.PhaseFailed && s.Attempts > 0 && strings.Contains(s.LastError, "injected fault") {
				sawFailure = true
			}
			if s.Phase == state.PhaseConfigured {
				configured++
			}
			return true
		})
		return configured == 2
	})
	if !sawFailure {
		t.Error("the State never showed a failed phase with attempts and the injected error")
	}
	_, metrics := get(t, srv.URL+"/metrics")
	for _, want := range []string{"peeragent_retries_total 6", `peeragent_effects_total{kind="add-peer",result="failed"} 6`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if n := sp.failed["10.0.0.2"] + sp.failed["10.0.0.9"]; n != 6 {
		t.Errorf("injected %d failures, want 6", n)
	}
}
