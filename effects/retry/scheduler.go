package retry

import (
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	"github.com/peeragent/peeragent/state"
)

// Clock is the Scheduler's source of time; tests pass a fake one.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d, unless stopped.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call; false if it already started.
	Stop() bool
}

type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// kind separates the results that can fail: a neighbor's (or the
// server's) speaker calls and a route table entry's dataplane call. Each
// is cleared only by its own success.
type kind uint8

const (
	peerKind  kind = 1 << iota
	tableKind      // a route table entry's call (docs/routes.md §9.7 rule 3)
)

// key is what a backoff is kept for: a neighbor's address (the zero one
// for the server), or a route table prefix.
type key struct {
	addr   netip.Addr
	prefix netip.Prefix
}

// backoff is the retry state of one address or prefix.
type backoff struct {
	gen      uint64 // newest generation seen for the address
	failing  kind   // kinds failed at gen and not applied since
	attempts int    // retry rounds since the address last had no failure
	timer    Timer  // pending RetryDue, nil when none
	token    uint64 // identifies timer, so a superseded callback does nothing
}

// Scheduler dispatches RetryDue after the backoff of each failing address.
// Safe for concurrent use.
type Scheduler struct {
	dispatch func(state.Action)
	jitter   func() float64
	clock    Clock

	mu      sync.Mutex
	peers   map[key]*backoff
	paths   map[netip.Prefix]*backoff // own path calls (paths.go)
	tokens  uint64
	stopped bool
}

// New returns a Scheduler that hands RetryDue to dispatch. jitter draws
// values in [0, 1) (nil: math/rand/v2); clock is nil for real time.
// dispatch is called from timer goroutines, without any lock held.
func New(dispatch func(state.Action), jitter func() float64, clock Clock) *Scheduler {
	if jitter == nil {
		jitter = rand.Float64
	}
	if clock == nil {
		clock = realClock{}
	}
	return &Scheduler{dispatch: dispatch, jitter: jitter, clock: clock, peers: map[key]*backoff{}}
}

// Observe updates the backoff of the address a result is for; every other
// action is ignored, so the agent can pass it everything it dispatches.
func (s *Scheduler) Observe(a state.Action) {
	switch a := a.(type) {
	case state.PeerApplyFailed:
		s.failed(a.Address, a.Gen, peerKind)
	case state.PeerApplied:
		s.applied(a.Address, a.Gen, peerKind)
	case state.ServerApplyFailed:
		// The server's retries are keyed by the zero address, as the
		// reducer reads a RetryDue without one.
		s.failed(netip.Addr{}, 0, peerKind)
	case state.ServerApplied:
		s.applied(netip.Addr{}, 0, peerKind)
	case state.TableRouteApplyFailed:
		s.failedKey(key{prefix: a.Prefix.Masked()}, a.Gen, tableKind)
	case state.TableRouteApplied:
		s.appliedKey(key{prefix: a.Prefix.Masked()}, a.Gen, tableKind)
	case state.PathApplyFailed:
		s.pathFailed(a.Prefix.Masked(), a.Gen)
	case state.PathApplied:
		s.pathApplied(a.Prefix.Masked(), a.Gen)
	}
}

// Stop cancels every pending retry; Observe does nothing afterwards.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for k, b := range s.peers {
		b.cancel()
		delete(s.peers, k)
	}
	s.stopPaths()
}

// failed starts a retry round unless one is already pending for this
// generation (the peer and route failures of one round count once).
func (s *Scheduler) failed(addr netip.Addr, gen uint64, k kind) {
	s.failedKey(key{addr: addr.Unmap()}, gen, k)
}

func (s *Scheduler) failedKey(addr key, gen uint64, k kind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	b := s.peers[addr]
	if b == nil {
		b = &backoff{gen: gen}
		s.peers[addr] = b
	}
	if !b.advance(gen) {
		return
	}
	b.failing |= k
	if b.timer == nil {
		s.schedule(addr, b)
	}
}

// schedule starts the next round's timer. Called with s.mu held.
func (s *Scheduler) schedule(addr key, b *backoff) {
	b.attempts++
	s.tokens++
	token := s.tokens
	b.token = token
	b.timer = s.clock.AfterFunc(Backoff(b.attempts, s.jitter()), func() { s.fire(addr, token) })
}

// applied clears the kind's failure; with none left, the address starts
// over: no timer, no attempts.
func (s *Scheduler) applied(addr netip.Addr, gen uint64, k kind) {
	s.appliedKey(key{addr: addr.Unmap()}, gen, k)
}

func (s *Scheduler) appliedKey(addr key, gen uint64, k kind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.peers[addr]
	if b == nil || !b.advance(gen) {
		return
	}
	b.failing &^= k
	if b.failing == 0 {
		b.cancel()
		delete(s.peers, addr)
	}
}

// fire dispatches the RetryDue of the timer identified by token, unless
// it was replaced, cancelled or stopped after the timer started.
func (s *Scheduler) fire(addr key, token uint64) {
	s.mu.Lock()
	b := s.peers[addr]
	if s.stopped || b == nil || b.token != token || b.timer == nil {
		s.mu.Unlock()
		return
	}
	b.timer = nil
	gen := b.gen
	s.mu.Unlock()
	// Outside the lock: dispatch may feed the loop that calls Observe.
	s.dispatch(state.RetryDue{Address: addr.addr, Prefix: addr.prefix, Gen: gen, At: s.clock.Now()})
}

// advance moves b to gen; false when gen is older than what b has seen,
// i.e. the result is stale and must not touch a newer generation's retry.
// A newer generation supersedes the older failures and their timer, whose
// RetryDue the reducer would drop as stale anyway.
func (b *backoff) advance(gen uint64) bool {
	switch {
	case gen < b.gen:
		return false
	case gen > b.gen:
		b.gen, b.failing = gen, 0
		b.cancel()
	}
	return true
}

func (b *backoff) cancel() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
}
