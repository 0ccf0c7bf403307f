package effects

import (
	"context"

	"github.com/peeragent/peeragent/state"
)

// Executor carries out effects and reports what happened as Actions: for
// each neighbor address and generation, exactly one PeerApplied or
// PeerApplyFailed (RouteApplied or RouteApplyFailed for VPP routes);
// ServerApplied or ServerApplyFailed for server effects. A failure on one
// neighbor never stops the others. Implementations: effects/gobgp,
// effects/vpp.
type Executor interface {
	Execute(ctx context.Context, effs []Effect) []state.Action
}

// Group splits effects between the speaker and VPP, keeping their order.
// Secret watches go to neither: the watch layer handles them.
func Group(effs []Effect) (speaker, vpp, watches []Effect) {
	for _, e := range effs {
		switch k := e.Ref().Kind; {
		case k.Speaker():
			speaker = append(speaker, e)
		case k == KindAddRoute || k == KindDeleteRoute:
			vpp = append(vpp, e)
		default:
			watches = append(watches, e)
		}
	}
	return speaker, vpp, watches
}
