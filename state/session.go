package state

import (
	"net/netip"
	"time"
)

// Phase is where a neighbor's session is in its lifecycle
// (docs/semantics.md §6). The transition table lives in the reducer; the
// phase itself is data here. Its JSON form is the string itself.
type Phase string

// The lifecycle phases.
const (
	PhaseNew         Phase = "new"
	PhaseWaiting     Phase = "waiting"
	PhaseConfiguring Phase = "configuring"
	PhaseConfigured  Phase = "configured"
	PhaseEstablished Phase = "established"
	PhaseUpdating    Phase = "updating"
	PhaseDeleting    Phase = "deleting"
	PhaseFailed      Phase = "failed"
)

// Phases lists every phase, in lifecycle order.
func Phases() []Phase {
	return []Phase{PhaseNew, PhaseWaiting, PhaseConfiguring, PhaseConfigured, PhaseEstablished,
		PhaseUpdating, PhaseDeleting, PhaseFailed}
}

func (p Phase) String() string { return string(p) }

// Pending operations of a session: what the last effect for it asked.
const (
	OpAdd    = "add"
	OpUpdate = "update"
	OpDelete = "delete"
)

// Session is the lifecycle of one neighbor address in the speaker. It
// outlives its Neighbor while a DeletePeer is pending or failing.
type Session struct {
	Address netip.Addr `json:"address"`
	Phase   Phase      `json:"phase"`
	Since   time.Time  `json:"since,omitzero"`
	// BGP is the speaker's last reported session state (idle, connect,
	// active, opensent, openconfirm, established), "" before any report.
	BGP            string `json:"bgp,omitempty"`
	Flaps          int    `json:"flaps"`
	LastDownReason string `json:"lastDownReason,omitempty"`
	Attempts       int    `json:"attempts"`
	LastError      string `json:"lastError,omitempty"`
	// Gen is the generation of the desired config: it changes whenever the
	// neighbor does, and results for another generation are stale.
	Gen uint64 `json:"gen"`
	// Op is the operation the last effect for this address performs.
	Op string `json:"op,omitempty"`
	// Retry is bumped when a failed generation's retry comes due: a
	// one-shot request Diff turns into a re-issue. RetryAt is when it comes
	// due (set with each failure, by the backoff of Attempts; zero unless
	// failed).
	Retry   uint64    `json:"retry,omitempty"`
	RetryAt time.Time `json:"retryAt,omitzero"`
	// Recreate is bumped when the session was lost gracefully and the
	// neighbor is to be configured anew in the speaker, so that its new
	// FSM takes the restarted peer's connection at once (docs/routes.md
	// §9.5 rule 2): a one-shot request Diff turns into a RecreatePeer.
	Recreate uint64 `json:"recreate,omitempty"`
	// Applied is the last config the speaker confirmed (nil before any).
	Applied *Neighbor `json:"-"`
	// MD5FailuresSeen: the kernel's TCP-MD5 failure counters grew while
	// this neighbor, which has a password, was not Established.
	MD5FailuresSeen bool `json:"md5FailuresSeen,omitempty"`
}

// Problem is bad input or an unmet dependency, named by its object
// (kind/name in lower case) and a human reason. Never a secret value.
type Problem struct {
	Object string `json:"object"`
	Reason string `json:"reason"`
}
