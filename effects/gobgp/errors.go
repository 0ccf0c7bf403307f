package gobgp

import (
	"net/netip"
	"slices"
	"strings"
	"sync"
)

// errKind is what a GoBGP error means for idempotency.
type errKind int

const (
	errOther  errKind = iota
	errAbsent         // the object (peer, policy, set, server) is not there
	errExists         // the peer is already configured
	errInUse          // the listen port is taken (StartBgp)
)

// kindOf is the one place GoBGP's error strings are recognised: GoBGP v4
// returns plain fmt.Errorf values, so the text is all there is. Each caller
// checks only the kind that makes its own call idempotent (deleting an
// absent object succeeds, adding an existing peer updates it).
//
// The strings, from pkg/server/server.go and internal/pkg/table/policy.go
// of GoBGP v4.8.0 (unchanged since v3.37.0):
//   - "can't delete a peer configuration for X"   DeletePeer of an absent peer
//   - "neighbor that has X doesn't exist"         UpdatePeer, ResetPeer of an absent peer
//   - "not found policy X", "not found defined-set: X", "not found statement: X",
//     "not found peer X"                          policy objects that are not there
//   - "bgp server hasn't started yet"             no server, so no peer either
//   - "can't overwrite the existing peer: X"      AddPeer of a configured peer
//   - "... bind: address already in use"           StartBgp, the port taken (the
//     kernel's EADDRINUSE as net.OpError prints it)
func kindOf(err error) errKind {
	if err == nil {
		return errOther
	}
	msg := err.Error()
	for _, s := range []string{"can't delete a peer configuration", "doesn't exist", "not found", "hasn't started yet"} {
		if strings.Contains(msg, s) {
			return errAbsent
		}
	}
	if strings.Contains(msg, "can't overwrite the existing peer") {
		return errExists
	}
	if strings.Contains(msg, "address already in use") {
		return errInUse
	}
	return errOther
}

// ignoreAbsent turns "not there" into success, for removals.
func ignoreAbsent(err error) error {
	if kindOf(err) == errAbsent {
		return nil
	}
	return err
}

// redactor knows the passwords handed to GoBGP, so that no error or log
// line leaving this package can carry one, whatever GoBGP put in it.
type redactor struct {
	mu      sync.RWMutex
	secrets map[netip.Addr]string
	// uses counts the neighbors of each distinct password; order lists
	// them longest first. Both follow remember, so that scrub, which runs
	// for every GoBGP log line passed on, neither walks nor sorts the map.
	uses  map[string]int
	order []string
}

func newRedactor() *redactor {
	return &redactor{secrets: map[netip.Addr]string{}, uses: map[string]int{}}
}

// remember records the password in use for a neighbor ("" forgets it).
func (r *redactor) remember(a netip.Addr, secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, had := r.secrets[a]
	if had && old == secret {
		return
	}
	if had {
		r.release(old)
	}
	if secret == "" {
		delete(r.secrets, a)
		return
	}
	r.secrets[a] = secret
	if r.uses[secret]++; r.uses[secret] == 1 {
		i, _ := slices.BinarySearchFunc(r.order, secret, longestFirst)
		r.order = slices.Insert(r.order, i, secret)
	}
}

// release drops one use of a password, and the password with its last.
func (r *redactor) release(secret string) {
	if r.uses[secret]--; r.uses[secret] > 0 {
		return
	}
	delete(r.uses, secret)
	if i, found := slices.BinarySearchFunc(r.order, secret, longestFirst); found {
		r.order = slices.Delete(r.order, i, i+1)
	}
}

// longestFirst orders passwords by decreasing length, then by text.
func longestFirst(a, b string) int {
	if len(a) != len(b) {
		return len(b) - len(a)
	}
	return strings.Compare(a, b)
}

// scrub replaces every known password in s. Longest first, so that a
// password containing another is removed whole.
func (r *redactor) scrub(s string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, v := range r.order {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}
