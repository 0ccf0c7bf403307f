package agent

import (
	"errors"
	"fmt"
	"time"

	"github.com/peeragent/peeragent/state"
)

// Health says why the agent is not healthy (nil when it is): the loop has
// not taken an action queued longer than StuckAfter ago or is in one step
// for longer (the step's send to a full effects queue included), an effects batch
// has run longer than StuckAfter (an executor call that never returns),
// or the speaker is down (the State's "server" problem: it failed to
// start, or its listener stopped accepting and it is being restarted).
// Each is something only a restart may cure if it lasts; /healthz fails
// with it and the kubelet's liveness probe decides. Another BGP speaker
// holding the port (calico-node's BIRD: State.ServerOtherSpeaker) is not:
// a restart would not free the port, only loop; the agent retries the
// start itself and /readyz says why it is not ready (docs/semantics.md §6).
func (l *Loop) Health() error {
	now := time.Now()
	var errs []error
	if q := l.box.oldest(); !q.IsZero() && now.Sub(q) > l.stuck {
		errs = append(errs, fmt.Errorf("loop stuck: an action has waited %s", now.Sub(q).Round(time.Second)))
	}
	if r := l.stepping.Load(); r != 0 && now.Sub(time.Unix(0, r)) > l.stuck {
		errs = append(errs, fmt.Errorf("loop stuck: one step has run for %s", now.Sub(time.Unix(0, r)).Round(time.Second)))
	}
	if r := l.running.Load(); r != 0 && now.Sub(time.Unix(0, r)) > l.stuck {
		errs = append(errs, fmt.Errorf("effects stuck: a batch has run for %s", now.Sub(time.Unix(0, r)).Round(time.Second)))
	}
	if s := l.State(); !s.ServerOtherSpeaker {
		if err := speakerDown(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// speakerDown is the State's "server" problem as an error.
func speakerDown(s state.State) error {
	probs, ok := s.Out.Problems.Get("server")
	if !ok || len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("speaker down: %s", probs[0].Reason)
}

// dataplaneDown is the dataplane executor's problem as an error: VPP not
// connected, or the kernel refusing every route change (docs/routes.md
// §9.7 rule 7). Not a health failure: a restart cures neither, and the
// agent keeps its sessions meanwhile; it only makes the node not ready.
func dataplaneDown(s state.State) error {
	probs := s.DataplaneDown()
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("dataplane down: %s", probs[0].Reason)
}
