package state

import (
	"net/netip"
	"slices"
	"sort"
	"time"
)

// Dump is the serialisable view of a State: what /state serves, what the
// golden files pin and what `peeragent plan` reads. Sorted throughout;
// passwords appear only as fingerprints.
type Dump struct {
	Node   string `json:"node"`
	Synced []Kind `json:"synced"`
	Server Server `json:"server"`
	// ServerAttempts and ServerRetryAt: the server's failures to start
	// since it last started, and when its retry comes due.
	ServerAttempts int       `json:"serverAttempts,omitempty"`
	ServerRetryAt  time.Time `json:"serverRetryAt,omitzero"`
	// ServerOtherSpeaker: that failure is another BGP speaker on the port.
	ServerOtherSpeaker bool `json:"serverOtherSpeaker,omitempty"`
	// Now is the reducer's clock: the time of the last Tick. Retries
	// counts the retries that came due.
	Now       time.Time      `json:"now,omitzero"`
	Retries   uint64         `json:"retries,omitempty"`
	Objects   map[string]int `json:"objects"`
	Watches   []string       `json:"watches"`
	Neighbors []*Neighbor    `json:"neighbors"`
	Sessions  []*Session     `json:"sessions"`
	Problems  []Problem      `json:"problems"`
	// Advertised are the own paths, by prefix, with the neighbors each
	// goes to (docs/routes.md §8.3 rule 11).
	Advertised []AdvertisedPath `json:"advertised"`
	// Routing is the learned side as a whole, Routes the route table by
	// prefix: desired, held, not installed and why, and each entry's
	// phase, attempts and last error (docs/routes.md §9.6, §9.7).
	Routing Routing       `json:"routing,omitzero"`
	Routes  []*TableRoute `json:"routes,omitempty"`
	// PathCalls are the own path calls that failed at least once and have
	// not succeeded since: phase, attempts and last error (docs/routes.md
	// §10). Calls that never failed are left out.
	PathCalls []*PathCall `json:"pathCalls,omitempty"`
	// ServiceWatch: the Service and EndpointSlice watches run
	// (docs/routes.md §8.4).
	ServiceWatch bool `json:"serviceWatch,omitempty"`
}

// AdvertisedPath is an own path in the dump: the path and its receivers.
type AdvertisedPath struct {
	Path
	To []netip.Addr `json:"to"`
}

// Dump builds the serialisable view. It costs O(size of the state): it is
// for the dump endpoint and tests, never for the reduce path.
func (s State) Dump() Dump {
	d := Dump{
		Node: s.Node, Server: s.Server, Now: s.Now, Synced: []Kind{},
		ServerAttempts: s.ServerAttempts, ServerRetryAt: s.ServerRetryAt, Retries: s.Retries,
		ServerOtherSpeaker: s.ServerOtherSpeaker,
		Watches:            s.Out.Watches.Keys(), Neighbors: []*Neighbor{}, Sessions: []*Session{},
		Objects: map[string]int{
			"bgppeers": s.Inputs.Peers.Len(), "bgpconfigurations": s.Inputs.Configs.Len(),
			"bgpfilters": s.Inputs.Filters.Len(), "nodes": s.Inputs.Nodes.Len(),
			"secrets": s.Inputs.Secrets.Len(), "blockaffinities": s.Inputs.Affinities.Len(),
			"ippools": s.Inputs.Pools.Len(), "pods": s.Inputs.Pods.Len(),
		},
		Advertised: []AdvertisedPath{}, ServiceWatch: s.Out.ServiceWatch,
	}
	if s.Out.ServiceWatch {
		d.Objects["services"], d.Objects["endpointslices"] = s.Inputs.Services.Len(), s.Inputs.EndpointSlices.Len()
	}
	for _, k := range SyncedKinds { // the gating kinds first
		if s.Synced[k] {
			d.Synced = append(d.Synced, k)
		}
	}
	for _, k := range InputKinds {
		if s.Synced[k.Kind()] && !slices.Contains(SyncedKinds, k.Kind()) {
			d.Synced = append(d.Synced, k.Kind())
		}
	}
	s.Out.Neighbors.Range(func(_ string, n *Neighbor) bool { d.Neighbors = append(d.Neighbors, n); return true })
	s.Out.Sessions.Range(func(_ string, x *Session) bool { d.Sessions = append(d.Sessions, x); return true })
	s.Out.Advertised.Range(func(_ string, p *Path) bool {
		d.Advertised = append(d.Advertised, AdvertisedPath{Path: *p, To: Receivers(p, d.Neighbors)})
		return true
	})
	s.Out.Routes.Range(func(_ string, r *TableRoute) bool { d.Routes = append(d.Routes, r); return true })
	s.Out.PathCalls.Range(func(_ string, c *PathCall) bool {
		if c.Attempts > 0 || c.Phase == RoutePhaseFailed {
			d.PathCalls = append(d.PathCalls, c)
		}
		return true
	})
	d.Routing = s.Routing
	d.Problems = s.AllProblems()
	return d
}

// AllProblems lists every problem (derived and reported by sources),
// sorted by object then reason, without duplicates.
func (s State) AllProblems() []Problem {
	out := []Problem{}
	add := func(_ string, ps []Problem) bool { out = append(out, ps...); return true }
	s.Out.Problems.Range(add)
	s.Inputs.InputProblems.Range(add)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Object != out[j].Object {
			return out[i].Object < out[j].Object
		}
		return out[i].Reason < out[j].Reason
	})
	n := 0
	for i, p := range out {
		if i == 0 || p != out[n-1] {
			out[n] = p
			n++
		}
	}
	return out[:n]
}
