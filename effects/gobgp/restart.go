package gobgp

import (
	"slices"

	api "github.com/osrg/gobgp/v4/api"
)

// selectionDeferralSeconds bounds how long a restarting speaker waits for
// every neighbor's End-of-RIB before it sends its own table and End-of-RIB
// (RFC 4724 section 4.1, GoBGP's DeferralTime): the agent's own paths are in the
// RIB before any neighbor is added (docs/routes.md §9.6 rule 6), so the
// wait only holds back learned routes it re-exports, and a neighbor that
// never comes up delays the others by this much at most.
const selectionDeferralSeconds = 10

// markRestarting makes p's session announce a graceful restart (docs/routes.md
// §9.6 rule 7): the Restart State bit, and the Forwarding State bit of its
// families, when the dataplane kept the forwarding state of every unicast
// family p carries with graceful restart (preserved). GoBGP v4.8.0 sets
// the Forwarding State bit of every such family alike whenever it sets
// the Restart State bit (pkg/server/fsm.go L1151-1166, "This can be a
// lie"), so a neighbor with a family whose state was not kept gets
// neither: its peer then flushes this node's stale routes at once rather
// than keep them on a false claim. It also defers this node's updates
// until every neighbor's End-of-RIB or selectionDeferralSeconds, then
// sends its table and End-of-RIB (pkg/server/server.go L1823-1905,
// softResetOut L2831-2860).
func markRestarting(p *api.Peer, preserved []string) {
	gr := p.GetGracefulRestart()
	if len(preserved) == 0 || !gr.GetEnabled() {
		return
	}
	found := false
	for _, a := range p.GetAfiSafis() {
		if a.GetMpGracefulRestart().GetConfig().GetEnabled() {
			if !slices.Contains(preserved, familyName(a.GetConfig().GetFamily())) {
				return
			}
			found = true
		}
	}
	if !found {
		return
	}
	gr.LocalRestarting = true
	gr.DeferralTime = selectionDeferralSeconds
}

// familyName is the State's name of a unicast family.
func familyName(f *api.Family) string {
	switch {
	case f.GetSafi() != api.Family_SAFI_UNICAST:
		return ""
	case f.GetAfi() == api.Family_AFI_IP:
		return "ipv4-unicast"
	case f.GetAfi() == api.Family_AFI_IP6:
		return "ipv6-unicast"
	}
	return ""
}
