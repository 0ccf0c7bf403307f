package effects

import (
	"context"

	"github.com/peeragent/peeragent/state"
)

// Executor carries out effects and reports what happened as Actions: for
// each neighbor address and generation, exactly one PeerApplied or
// PeerApplyFailed; for each route table prefix and generation, one
// TableRouteApplied or TableRouteApplyFailed; ServerApplied or
// ServerApplyFailed for server effects. A failure on one neighbor or
// route never stops the others. Implementations: effects/gobgp,
// effects/vpp, effects/linux.
type Executor interface {
	Execute(ctx context.Context, effs []Effect) []state.Action
}

// Group splits effects between the speaker and the dataplane, keeping
// their order. Secret and service watches and the alarm go to neither:
// the watch layer and the agent's alarm handle them (the third list).
func Group(effs []Effect) (speaker, dataplane, watches []Effect) {
	for _, e := range effs {
		switch k := e.Ref().Kind; {
		case k.Speaker():
			speaker = append(speaker, e)
		case k.Dataplane():
			dataplane = append(dataplane, e)
		default:
			watches = append(watches, e)
		}
	}
	return speaker, dataplane, watches
}

// Runner is an Executor that also follows something outside the agent for
// as long as ctx lasts and reports what it finds back as Actions through
// dispatch: effects/vpp's Dial-made executor keeps its VPP connection,
// reports it as an input problem while VPP is away, and sends every route
// again when VPP restarts. Run returns nil when ctx ends, or at once when
// there is nothing to follow; an error is a failure of the link, and the
// caller starts Run again (cmd/peeragent's supervisor restarts the
// dataplane's Run as its own part, apart from the loop, so that a failed
// link never stops the loop). Executors without such facts do not
// implement it.
type Runner interface {
	Executor
	Run(ctx context.Context, dispatch func(state.Action)) error
}
