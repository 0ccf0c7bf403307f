package state

import (
	"net/netip"
	"slices"
	"time"

	"github.com/peeragent/peeragent/state/pmap"
)

// LearnedPath is one path of a best-path event (docs/routes.md §9.1): the
// next hops as the speaker gives them (IPv4: the NEXT_HOP; IPv6: the
// MP_REACH next hops, global first, then the link-local one), the neighbor
// it came from (zero for a local path), and whether it is a withdrawal or
// N's own path.
type LearnedPath struct {
	NextHops  []netip.Addr `json:"nextHops,omitempty"`
	Neighbor  netip.Addr   `json:"neighbor,omitzero"`
	Local     bool         `json:"local,omitempty"`
	Withdrawn bool         `json:"withdrawn,omitempty"`
	// Stale: kept by the reducer after its neighbor's session was lost
	// gracefully and the neighbor configured anew (Routing.Stale,
	// docs/routes.md §9.5 rule 2); never set in a fact.
	Stale bool `json:"stale,omitempty"`
}

// BestPaths is one prefix of a best-path event: its new best path or, with
// multipath, its whole equal-best set (docs/routes.md §9.1 rule 1, §9.4).
// In the State (Inputs.Learned, Objects.Learned) only the paths that count
// are kept: neither withdrawn nor local.
type BestPaths struct {
	Prefix netip.Prefix  `json:"prefix"`
	Paths  []LearnedPath `json:"paths,omitempty"`
}

// BestPathsChanged: the speaker's watch (WatchEvent, its best-path filter
// BEST) reported prefixes of the global RIB, for the speaker of generation
// Gen (docs/routes.md §9.1). For each listed prefix the learned next-hop
// set is replaced; Init is the watch's initial snapshot, which replaces the
// whole learned table. Events of another generation are stale and dropped
// (§9.1 rule 3).
type BestPathsChanged struct {
	Gen      uint64      `json:"gen"`
	Init     bool        `json:"init,omitempty"`
	Prefixes []BestPaths `json:"prefixes,omitempty"`
}

// EndOfRIBReceived: the speaker of generation Gen received End-of-RIB from
// Neighbor for Family ("ipv4-unicast", "ipv6-unicast"): its initial table
// is complete, one of the conditions of settling (docs/routes.md §9.6 rule 3).
type EndOfRIBReceived struct {
	Gen      uint64     `json:"gen"`
	Neighbor netip.Addr `json:"neighbor"`
	Family   string     `json:"family"`
}

// Tick: the agent's alarm rang. The alarm executor keeps one timer, set by
// the effects.Alarm that Diff emits whenever the State's earliest deadline
// (State.Deadline) changes, and dispatches a Tick with the time when it
// fires; the reducer, which reads no clock, then does what is due at At
// (docs/design.md "Time").
type Tick struct {
	At time.Time `json:"at"`
}

func (BestPathsChanged) ActionName() string { return "bestPathsChanged" }
func (EndOfRIBReceived) ActionName() string { return "endOfRIBReceived" }
func (Tick) ActionName() string             { return "tick" }

// RoutePhase is where a route table entry stands with the dataplane.
type RoutePhase string

// The route phases (docs/routes.md §9.6, §9.7 rule 3).
const (
	RoutePhasePending RoutePhase = "pending" // a call is due or its result is
	RoutePhaseApplied RoutePhase = "applied"
	RoutePhaseFailed  RoutePhase = "failed"
	RoutePhaseSkipped RoutePhase = "skipped" // --dataplane none
	RoutePhaseAdopted RoutePhase = "adopted" // listed at start equal to the desired route: no call
	RoutePhaseHeld    RoutePhase = "held"    // listed at start, not desired: kept until settled
)

// TableRoute is one prefix of the route table (docs/routes.md §9.7): the
// desired route (Drop, or Via next hops; neither: not desired), where it
// comes from, the route the dataplane held at start (kept until settled,
// §9.6), why a learned prefix is not installed (§9.2), and the state of
// its last call (§9.7 rule 3: failed routes are data).
type TableRoute struct {
	Prefix netip.Prefix `json:"prefix"`
	Drop   bool         `json:"drop,omitempty"`
	// Refused is the cause when the peer's route is refused (§9.2 rule
	// 8); NotInstalled then says why in words.
	Refused Refusal      `json:"refused,omitempty"`
	Via     []netip.Addr `json:"via,omitempty"`
	// Origin: "blockaffinity/NAME" for an own-block drop route (§9.3),
	// "learned" for a learned route (§9.2), the neighbor's origin
	// ("bgppeer/NAME") for its reachableBy host route (§9.7 rule 3).
	Origin string `json:"origin,omitempty"`
	// NotInstalled says why a learned prefix is not installed.
	NotInstalled string     `json:"notInstalled,omitempty"`
	Held         *Route     `json:"held,omitempty"`
	Gen          uint64     `json:"gen,omitempty"`
	Phase        RoutePhase `json:"phase,omitempty"`
	Attempts     int        `json:"attempts,omitempty"`
	LastError    string     `json:"lastError,omitempty"`
	// Retry is bumped when the retry of a failed call comes due (RetryAt,
	// set with each failure by the backoff of Attempts; zero unless
	// failed): a one-shot request Diff turns into the call again.
	Retry   uint64    `json:"retry,omitempty"`
	RetryAt time.Time `json:"retryAt,omitzero"`
}

// Wanted reports whether the entry has a desired route.
func (r *TableRoute) Wanted() bool { return r != nil && (r.Drop || len(r.Via) > 0) }

// Target is the route the dataplane should have for the prefix: the
// desired one, else the held one (until settled), else none.
func (r *TableRoute) Target() *Route {
	switch {
	case r == nil:
		return nil
	case r.Wanted():
		return &Route{Prefix: r.Prefix, Drop: r.Drop, Via: r.Via}
	default:
		return r.Held
	}
}

// SameRoute reports whether two targets are the same dataplane entry.
func SameRoute(a, b *Route) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// Routing is the state of the learned side and of the dataplane table as a
// whole (docs/routes.md §9.1, §9.6).
type Routing struct {
	// SpeakerGen names the running speaker: bumped at each (re)start or
	// stop of the server; facts of another generation are dropped.
	SpeakerGen uint64 `json:"speakerGen,omitempty"`
	// Seq counts route table changes; route generations are drawn from it.
	Seq uint64 `json:"seq,omitempty"`
	// Listed: the dataplane executor listed its routes (RoutesListed);
	// ListError is why the listing failed (nothing is held then).
	Listed    bool   `json:"listed,omitempty"`
	ListError string `json:"listError,omitempty"`
	// Settled: held routes that are not desired may be removed (§9.6 rule
	// 3). Reset at each speaker (re)start (§9.6 rule 5).
	Settled bool `json:"settled,omitempty"`
	// Since is when the speaker of this generation started (the At of its
	// ServerApplied); zero until then, and the time limits of settling do
	// not run before it.
	Since time.Time `json:"since,omitzero"`
	// SettleAt is the deadline of settling: the earliest time at which the
	// settle maximum or a neighbor's restart time runs out, when the routes
	// are looked at again; zero once settled or before Since.
	SettleAt time.Time `json:"settleAt,omitzero"`
	// EOR lists "ADDRESS FAMILY" of the End-of-RIBs received by this
	// speaker generation, sorted.
	EOR []string `json:"eor,omitempty"`
	// RescanAt is when the next rescan is due (§9.7 rule 6): every
	// Options.RouteRescan once settled; zero while not settled or with
	// rescans off.
	RescanAt time.Time `json:"rescanAt,omitzero"`
	// Rescan counts the rescans asked of the dataplane (§9.7 rule 6),
	// Rescanned the last one whose listing arrived; one at a time.
	Rescan    uint64 `json:"rescan,omitempty"`
	Rescanned uint64 `json:"rescanned,omitempty"`
	// RescanError is why the last rescan's listing failed.
	RescanError string `json:"rescanError,omitempty"`
	// Repairs counts the routes a rescan found missing, different or
	// unknown in the dataplane, and that were applied or removed again.
	Repairs uint64 `json:"repairs,omitempty"`
	// Preserved lists the families ("ipv4-unicast", "ipv6-unicast") of
	// which the dataplane held routes of this agent when it was listed at
	// start: forwarding state this process kept from an earlier one, so
	// the first speaker restarts gracefully for them (§9.6 rule 7).
	Preserved []string `json:"preserved,omitempty"`
	// Refused counts the learned prefixes refused, per cause (§9.2 rule
	// 8); each cause with a count is one problem.
	Refused RefusedCounts `json:"refused,omitempty"`
	// Stale are the neighbors whose learned paths the reducer keeps after
	// a graceful session loss (§9.5 rule 2), by address; a new slice
	// whenever it changes.
	Stale []StaleNeighbor `json:"stale,omitempty"`
	// Settle is the reducer's count of what settling waits for, while
	// not settled (reducer/settle.go); not part of the dump.
	Settle *SettleCount `json:"-"`
}

// SettleCount counts what settling waits for (§9.6 rule 3) over the
// neighbors, sessions and End-of-RIBs it was counted from, so that a
// reduce step counts again only the neighbors whose entries changed since
// (the reducer's shortcut; its plain form walks every neighbor). Never
// modified once made.
type SettleCount struct {
	Neighbors *pmap.Map[*Neighbor]
	Sessions  *pmap.Map[*Session]
	EOR       []string
	// Pending counts the active Established neighbors without an
	// End-of-RIB of some unicast family; Restarts the active neighbors
	// that are not Established (neither waiting nor failed), by restart
	// time, in ascending order, none with a zero count.
	Pending  int
	Restarts []RestartCount
}

// RestartCount is how many neighbors settling waits for with one restart
// time.
type RestartCount struct {
	Restart time.Duration
	N       int
}

// StaleNeighbor is a neighbor whose session was lost gracefully and that
// the speaker configured anew (a RecreatePeer): its paths of Families
// stay in the learned table, marked stale, until the new session's
// End-of-RIB of each family, Until (the loss plus the restart time the
// neighbor advertised), or the neighbor's removal or reset (docs/routes.md
// §9.5 rule 2).
type StaleNeighbor struct {
	Neighbor netip.Addr `json:"neighbor"`
	Families []string   `json:"families"`
	Until    time.Time  `json:"until"`
	// Config is the neighbor's config when the session was lost: another
	// one that resets the session ends the wait.
	Config *Neighbor `json:"-"`
	// Prefixes are the keys (PrefixKey) of the learned prefixes that held
	// a path of the neighbor then; Paths counts them.
	Prefixes []string `json:"-"`
	Paths    int      `json:"paths"`
}

// StaleOf is the stale record of addr, or nil.
func (r Routing) StaleOf(addr netip.Addr) *StaleNeighbor {
	for i := range r.Stale {
		if r.Stale[i].Neighbor == addr {
			return &r.Stale[i]
		}
	}
	return nil
}

// HasEOR reports whether End-of-RIB from addr for family was received.
// It builds the key on the stack: the settle check asks it for every
// neighbor at every step until the routes are settled.
func (r Routing) HasEOR(addr netip.Addr, family string) bool {
	var buf [64]byte
	k := append(append(appendAddrKey(buf[:0], addr.Unmap()), ' '), family...)
	lo, hi := 0, len(r.EOR)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.EOR[m] < string(k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(r.EOR) && r.EOR[lo] == string(k)
}

// WithEOR returns the EOR list with addr and family added (a new slice).
func (r Routing) WithEOR(addr netip.Addr, family string) []string {
	k := eorKey(addr, family)
	i, ok := slices.BinarySearch(r.EOR, k)
	if ok {
		return r.EOR
	}
	return slices.Insert(slices.Clone(r.EOR), i, k)
}

func eorKey(addr netip.Addr, family string) string { return AddrKey(addr.Unmap()) + " " + family }

// RoutesReady reports whether route calls may be made: every gating
// source has listed, and so has the dataplane (docs/routes.md §9.6 rule 1).
func (s State) RoutesReady() bool { return s.Routing.Listed && s.AllSynced() }

// The defaults of the route options (docs/routes.md appendix C, C6).
const (
	DefaultMaxPaths = 16
	// DefaultMaxPrefixes is each neighbor's limit of routes learned per
	// address family (docs/routes.md §9.9).
	DefaultMaxPrefixes    = 20000
	DefaultRouteSettleMax = 240 * time.Second
)

// PrefixLimitReason is the down reason of a session the speaker ended
// because the neighbor sent more than MaxPrefixes routes of a family
// (docs/routes.md §9.9).
const PrefixLimitReason = "prefix limit reached: the neighbor sent more routes of a family than its maxPrefixes"
