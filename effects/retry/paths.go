package retry

import (
	"net/netip"

	"github.com/peeragent/peeragent/state"
)

// pathFailed starts the backoff of a failed own path call (docs/routes.md
// §10) unless one is pending for this generation: each prefix has its own
// backoff, apart from the addresses'.
func (s *Scheduler) pathFailed(p netip.Prefix, gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	if s.paths == nil {
		s.paths = map[netip.Prefix]*backoff{}
	}
	b := s.paths[p]
	if b == nil {
		b = &backoff{gen: gen}
		s.paths[p] = b
	}
	if !b.advance(gen) {
		return
	}
	b.failing = peerKind
	if b.timer == nil {
		b.attempts++
		s.tokens++
		token := s.tokens
		b.token = token
		b.timer = s.clock.AfterFunc(Backoff(b.attempts, s.jitter()), func() { s.firePath(p, token) })
	}
}

// pathApplied: the prefix's call went through; it starts over.
func (s *Scheduler) pathApplied(p netip.Prefix, gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.paths[p]
	if b == nil || !b.advance(gen) {
		return
	}
	b.cancel()
	delete(s.paths, p)
}

// firePath dispatches the RetryDue of a path timer unless it was replaced,
// cancelled or stopped after the timer started.
func (s *Scheduler) firePath(p netip.Prefix, token uint64) {
	s.mu.Lock()
	b := s.paths[p]
	if s.stopped || b == nil || b.token != token || b.timer == nil {
		s.mu.Unlock()
		return
	}
	b.timer = nil
	gen := b.gen
	s.mu.Unlock()
	s.dispatch(state.RetryDue{Prefix: p, Path: true, Gen: gen, At: s.clock.Now()})
}

// stopPaths cancels the path timers. Called with s.mu held.
func (s *Scheduler) stopPaths() {
	for p, b := range s.paths {
		b.cancel()
		delete(s.paths, p)
	}
}
