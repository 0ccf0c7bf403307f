package reducer

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// reduceResult handles what the executors and the speaker report. Each
// result names the generation it was computed for; a result for another
// generation is stale and dropped, leaving the State as it was.
func reduceResult(s state.State, a state.Action) state.State {
	t := &tx{s: s, dirty: map[string]struct{}{}, wasReady: s.RoutesReady()}
	switch a := a.(type) {
	case state.PeerApplied:
		t.at = a.At
		t.current(a.Address, a.Gen, t.peerApplied)
	case state.PeerApplyFailed:
		t.at = a.At
		t.current(a.Address, a.Gen, func(k string, x *state.Session) { t.peerFailed(k, x, a.Error, a.At) })
	case state.PeerKeyRefused:
		t.at = a.At
		t.current(a.Address, a.Gen, func(k string, x *state.Session) {
			// The executor took the neighbor out of the speaker: the retry
			// adds it again.
			x.BGP, x.Applied, x.Op = "", nil, state.OpAdd
			t.peerFailed(k, x, a.Error, a.At)
		})
	case state.MD5FailuresObserved:
		t.md5Failures(a)
	case state.KernelLimitsObserved:
		t.s.OptmemMax = a.OptmemMax
		t.checkKeyMemory()
	case state.PathApplied:
		t.pathApplied(a)
	case state.PathApplyFailed:
		t.pathFailed(a)
	case state.TableRouteApplied:
		t.tableRouteApplied(a)
	case state.TableRouteApplyFailed:
		t.tableRouteFailed(a)
	case state.SessionStateChanged:
		t.at = a.At
		t.sessionState(a)
	case state.ServerApplied:
		if a.Server == s.Server {
			t.setProblems("server", nil)
			t.s.ServerAttempts, t.s.ServerRetryAt, t.s.ServerOtherSpeaker = 0, time.Time{}, false
			t.serverStarted(a.At)
		}
	case state.ServerApplyFailed:
		if a.Server == s.Server {
			t.setProblems("server", []state.Problem{{Object: "server", Reason: a.Error}})
			t.s.ServerOtherSpeaker = a.OtherSpeaker // not ready, still healthy (agent/health.go)
			t.s.ServerAttempts++
			t.s.ServerRetryAt = t.retryAt(state.RetryServer, "", t.s.ServerAttempts, a.At)
		}
	}
	t.routesDone(false)
	t.dropStaleRetries()
	return t.s
}

// peerFailed: the speaker refused the session's current generation at
// failed; it is retried after the backoff of its attempts.
func (t *tx) peerFailed(k string, x *state.Session, why string, failed time.Time) {
	x.Attempts++
	x.LastError = why
	t.move(x, evFail)
	if x.Phase == pFail {
		x.RetryAt = t.retryAt(state.RetryPeer, k, x.Attempts, failed)
	}
	t.putSession(k, x)
}

// serverStarted: the speaker of this generation runs since at, when the
// time limits of settling start (docs/routes.md §9.6 rule 3). Only its
// first start counts: a repeated result does not move them.
func (t *tx) serverStarted(at time.Time) {
	if r := &t.s.Routing; r.Since.IsZero() && !r.Settled {
		r.Since = at
	}
}

// current calls fn with a copy of the session at addr when gen is its
// current generation; otherwise the result is stale and nothing happens.
func (t *tx) current(addr netip.Addr, gen uint64, fn func(string, *state.Session)) {
	k := state.AddrKey(addr.Unmap())
	cur, ok := t.s.Out.Sessions.Get(k)
	if !ok || cur.Gen != gen {
		return
	}
	x := *cur
	fn(k, &x)
}

func (t *tx) putSession(k string, x *state.Session) {
	t.s.Out.Sessions = t.s.Out.Sessions.Set(k, x)
}

// peerApplied: the speaker now holds the current generation. A confirmed
// deletion ends the session; otherwise the applied config is remembered
// (it is what a missing secret falls back to).
func (t *tx) peerApplied(k string, x *state.Session) {
	n, ok := t.s.Out.Neighbors.Get(k)
	if !ok {
		if x.Phase == pDeleting || x.Phase == pFail {
			t.s.Out.Sessions = t.s.Out.Sessions.Delete(k)
		}
		return
	}
	if !n.Active() {
		// The undo of an unconfirmed add landed: back to waiting.
		if x.Phase == pFail {
			x.Attempts, x.LastError = 0, ""
			t.move(x, evHold)
			t.putSession(k, x)
		}
		return
	}
	x.Applied, x.Attempts, x.LastError = n, 0, ""
	t.move(x, evApplied)
	if x.BGP == "established" {
		t.move(x, evUp)
	}
	t.putSession(k, x)
}

// sessionState follows the speaker's view of a session. Leaving
// Established is a flap, counted with its reason.
func (t *tx) sessionState(a state.SessionStateChanged) {
	k := state.AddrKey(a.Address.Unmap())
	cur, ok := t.s.Out.Sessions.Get(k)
	if !ok || cur.BGP == a.State {
		return
	}
	x := *cur
	if x.BGP == "established" {
		x.Flaps++
		x.LastDownReason = a.Reason
		if x.LastDownReason == "" {
			x.LastDownReason = "went to " + a.State
		}
		t.move(&x, evDown)
		t.sessionLost(k, &x, a) // docs/routes.md §9.5 rule 2
	}
	x.BGP = a.State
	t.prefixLimit(k, a)
	if a.State == "established" {
		t.move(&x, evUp)
		if x.MD5FailuresSeen {
			x.MD5FailuresSeen = false
			t.setProblems("md5/"+k, nil)
		}
	}
	if !a.At.IsZero() {
		x.Since = a.At
	}
	t.putSession(k, &x)
}

// prefixLimit: a session the speaker ended over the neighbor's prefix
// limit is a problem naming the neighbor until it is established again
// (docs/routes.md §9.9).
func (t *tx) prefixLimit(k string, a state.SessionStateChanged) {
	switch {
	case a.State == "established":
		if t.hasProblems("prefixlimit/", k) {
			t.setProblems("prefixlimit/"+k, nil)
		}
	case a.Reason == state.PrefixLimitReason:
		n, ok := t.s.Out.Neighbors.Get(k)
		if !ok {
			return
		}
		raise := "--max-prefixes" // the mesh: no BGPPeer to annotate
		if strings.HasPrefix(n.Origin, "bgppeer/") {
			raise += " or the BGPPeer's annotation " + state.AnnotationMaxPrefixes
		}
		t.setProblems("prefixlimit/"+k, []state.Problem{{Object: n.Origin, Reason: fmt.Sprintf(
			"neighbor %s sent more than %d routes of a family: session held down (raise %s, or fix the peer)",
			n.Address, n.MaxPrefixes, raise)}})
	}
}

// md5Failures marks the keyed neighbors that are not Established when the
// kernel's TCP-MD5 failure counters grow (the first observation is the
// baseline): a wrong or missing password at the peer otherwise shows only
// as "active, attempts 0".
func (t *tx) md5Failures(a state.MD5FailuresObserved) {
	prev, baseline := t.s.MD5Failures, t.s.MD5Observed
	t.s.MD5Failures, t.s.MD5Observed = a.Count, true
	if !baseline || a.Count <= prev {
		return
	}
	t.s.Out.Sessions.Range(func(k string, x *state.Session) bool {
		n, ok := t.s.Out.Neighbors.Get(k)
		if !ok || n.Password.IsZero() || !n.Active() || x.BGP == "established" || x.MD5FailuresSeen {
			return true
		}
		c := *x
		c.MD5FailuresSeen = true
		t.putSession(k, &c)
		t.setProblems("md5/"+k, []state.Problem{{Object: n.Origin, Reason: fmt.Sprintf(
			"neighbor %s: TCP-MD5 signature failures seen (the peer's password differs, or it has none)", n.Address)}})
		return true
	})
}

// md5KeyBytes is what one TCP-MD5 key costs in the listening socket's
// option memory, measured: about 960 keys fill net.core.optmem_max at
// 128 KiB.
const md5KeyBytes = 136

// MD5KeyMemoryProblem says why keys TCP-MD5 keys do not fit comfortably in
// optmem bytes of socket option memory ("" when they do): past 90 % the
// kernel is close to refusing the next key, which GoBGP would only log.
func MD5KeyMemoryProblem(optmem int64, keys int) string {
	if optmem <= 0 || int64(keys)*md5KeyBytes*10 <= optmem*9 {
		return ""
	}
	return fmt.Sprintf("%d neighbors with a TCP-MD5 password need about %d bytes of socket option memory; "+
		"net.core.optmem_max is %d (room for about %d): raise it (sysctl net.core.optmem_max) before the kernel refuses a key",
		keys, int64(keys)*md5KeyBytes, optmem, optmem/md5KeyBytes)
}

// checkKeyMemory reports MD5KeyMemoryProblem for the current neighbors.
func (t *tx) checkKeyMemory() {
	if t.s.OptmemMax <= 0 {
		t.setProblems("kernel/optmem", nil)
		return
	}
	keys := 0
	t.s.Out.Neighbors.Range(func(_ string, n *state.Neighbor) bool {
		if n.Active() && !n.Password.IsZero() {
			keys++
		}
		return true
	})
	var probs []state.Problem
	if why := MD5KeyMemoryProblem(t.s.OptmemMax, keys); why != "" {
		probs = []state.Problem{{Object: "kernel", Reason: why}}
	}
	t.setProblems("kernel/optmem", probs)
}

// ReduceRouteResults is Reduce of each result in turn (the dataplane
// executor reports one per route, docs/routes.md §9.7), made as one step:
// the route table's changes are one batch while the prefixes come in key
// order, as effects.ApplyRoutes reports them. A result touches only its
// own prefix's entry and problem, and nothing settling reads, so the
// State is the one Reduce one by one gives.
func ReduceRouteResults(s state.State, rs []state.TableRouteApplied) state.State {
	t := &tx{s: s, dirty: map[string]struct{}{}, wasReady: s.RoutesReady()}
	t.routeEdits = make([]pmap.Edit[*state.TableRoute], 0, len(rs))
	for _, a := range rs {
		k := state.PrefixKey(a.Prefix.Masked())
		if n := len(t.routeEdits); n > 0 && k <= t.routeEdits[n-1].Key {
			t.s.Out.Routes, t.routeEdits = t.s.Out.Routes.Apply(t.routeEdits), t.routeEdits[:0]
		}
		t.tableRouteAppliedAt(k, a)
	}
	t.s.Out.Routes, t.routeEdits = t.s.Out.Routes.Apply(t.routeEdits), nil
	t.routesDone(false)
	t.dropStaleRetries()
	return t.s
}
