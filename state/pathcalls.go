package state

import (
	"net/netip"
	"time"
)

// PathCall is where the speaker's call for one own path stands
// (docs/routes.md §10): the generation of its last add-path or delete-path
// (Op "add" or "delete"), its phase, and, once it failed, the attempts and
// the last error. Retry is bumped when the retry of the failed call comes
// due (RetryAt, set with each failure by the backoff of Attempts): a
// one-shot request Diff turns into the call again. An applied delete ends
// the entry.
type PathCall struct {
	Prefix    netip.Prefix `json:"prefix"`
	Op        string       `json:"op"`
	Gen       uint64       `json:"gen"`
	Phase     RoutePhase   `json:"phase"`
	Attempts  int          `json:"attempts,omitempty"`
	LastError string       `json:"lastError,omitempty"`
	Retry     uint64       `json:"retry,omitempty"`
	RetryAt   time.Time    `json:"retryAt,omitzero"`
}

// The operations of a PathCall.
const (
	PathOpAdd    = "add"
	PathOpDelete = "delete"
)

// PathApplied: the GoBGP executor carried out the add-path or delete-path
// of generation Gen for Prefix (docs/routes.md §10).
type PathApplied struct {
	Prefix netip.Prefix `json:"prefix"`
	Gen    uint64       `json:"gen"`
	At     time.Time    `json:"at,omitzero"`
}

// PathApplyFailed: the GoBGP executor failed the add-path or delete-path
// of generation Gen for Prefix (or no speaker was running). Error is
// wrapped once, with the effect.
type PathApplyFailed struct {
	Prefix netip.Prefix `json:"prefix"`
	Gen    uint64       `json:"gen"`
	Error  string       `json:"error"`
	At     time.Time    `json:"at,omitzero"`
}

func (PathApplied) ActionName() string     { return "pathApplied" }
func (PathApplyFailed) ActionName() string { return "pathApplyFailed" }
