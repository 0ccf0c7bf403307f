package state

import (
	"strconv"
	"time"
)

// Deadline is the earliest time at which the State has something to do
// (docs/design.md "Time"): the settle deadline (Routing.SettleAt), the
// next rescan (Routing.RescanAt) or the first retry (Index.Retries). Zero:
// nothing is waiting for time. effects.Diff emits an Alarm whenever it
// changes; the alarm executor dispatches a Tick when it comes.
func (s State) Deadline() time.Time {
	at := earliest(s.Routing.SettleAt, s.Routing.RescanAt)
	if d, ok := s.FirstRetry(); ok {
		at = earliest(at, d.At)
	}
	for _, x := range s.Routing.Stale {
		at = earliest(at, x.Until)
	}
	return at
}

// earliest is the earlier of two deadlines, a zero one being none.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// The kinds of retry (Due.Kind): a neighbor's speaker calls (by AddrKey),
// a route table entry's dataplane call and an own path's speaker call (by
// PrefixKey), the server's start (no key).
const (
	RetryPeer   = "peer"
	RetryRoute  = "route"
	RetryPath   = "path"
	RetryServer = "server"
)

// Due is a retry that comes due At: of the record Key of Kind.
type Due struct {
	At   time.Time
	Kind string
	Key  string
}

// DueKey orders retries by time, then kind and key: a fixed-width count
// of nanoseconds since 1970 (earlier times count as 1970), then the rest.
func DueKey(d Due) string {
	n := max(d.At.UnixNano(), 0)
	if d.At.Before(time.Unix(0, 0)) {
		n = 0
	}
	digits := strconv.FormatInt(n, 10)
	b := make([]byte, 0, 19+2+len(d.Kind)+len(d.Key))
	for range 19 - len(digits) {
		b = append(b, '0')
	}
	b = append(b, digits...)
	b = append(append(append(b, ' '), d.Kind...), ' ')
	return string(append(b, d.Key...))
}

// FirstRetry is the earliest retry, if any.
func (s State) FirstRetry() (Due, bool) {
	var first Due
	found := false
	s.Index.Retries.Range(func(_ string, d Due) bool {
		first, found = d, true
		return false
	})
	return first, found
}
