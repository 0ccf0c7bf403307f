package effects

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/peeragent/peeragent/state"
)

// Effect is one call to make. String is its stable one-line form.
type Effect interface {
	fmt.Stringer
	// Address is the neighbor the effect is for (zero for server and
	// secret-watch effects); executors group and order by it. It is
	// Ref().Addr.
	Address() netip.Addr
	// Ref is the effect's kind, address and generation.
	Ref() Ref
}

// StartServer is GoBGP StartBgp with the node's AS, router ID and listen
// port. Issued once, when the node is first known. Not idempotent by
// itself; the executor treats "already started" with the same config as done.
// Gen is the speaker generation (State.Routing.SpeakerGen) the executor's
// best-path and End-of-RIB facts carry (docs/routes.md §9.1 rule 3); it is
// not part of String, so plans and goldens do not show it.
type StartServer struct {
	Server state.Server
	Gen    uint64
	// Preserved are the families whose forwarding state the dataplane
	// kept from an earlier run of the agent (state.Routing.Preserved):
	// the neighbors configured with this start announce a graceful
	// restart for them (docs/routes.md §9.6 rule 7). Left out of String,
	// as Gen is.
	Preserved []string
}

// RestartServer is StopBgp then StartBgp with the new global config. It
// drops every session; Diff follows it with the full set of AddPeer and
// SetPolicy effects for the neighbors of the new State. Gen is as in
// StartServer.
type RestartServer struct {
	Old, New state.Server
	Gen      uint64
}

// StopServer is StopBgp, when this node no longer exists or has no address.
// Idempotent.
type StopServer struct{ Old state.Server }

// WatchSecret starts the per-name watch of a Secret in the agent's
// namespace. Idempotent.
type WatchSecret struct{ Namespace, Name string }

// UnwatchSecret stops that watch. Idempotent.
type UnwatchSecret struct{ Namespace, Name string }

// WatchServices starts the Service and EndpointSlice watches (list, then
// watch, of every namespace), needed while some service range is
// configured (docs/routes.md §8.4, §10). Idempotent.
type WatchServices struct{}

// UnwatchServices stops those watches. Idempotent.
type UnwatchServices struct{}

// AddPeer is GoBGP AddPeer with the neighbor's full config (and, when it
// has a policy, the policy assignment). Idempotent in the executor: adding
// an existing peer updates it.
type AddPeer struct {
	Neighbor *state.Neighbor
	Gen      uint64
}

// UpdatePeer is GoBGP UpdatePeer. Changes lists what differs; Reset says
// whether GoBGP drops the session to apply it. An empty Changes re-confirms
// a generation whose net change was nothing. Idempotent.
type UpdatePeer struct {
	Old, New *state.Neighbor
	Gen      uint64
	Changes  []Change
	Reset    bool
}

// RecreatePeer configures the neighbor at Addr anew in the speaker: GoBGP
// DeletePeer, then AddPeer with the config last applied, when its session
// is not Established (again) by then. Its new FSM has no idle hold, so the
// restarted peer's first connection is taken (docs/routes.md §9.5 rule 2).
// Diff emits it when the session's Recreate is bumped; the reducer keeps
// the neighbor's learned paths meanwhile. No result is reported: the
// session events of the new FSM follow. Idempotent in effect: another
// recreation of a neighbor that is not Established changes nothing.
type RecreatePeer struct {
	Addr netip.Addr
}

// DeletePeer is GoBGP DeletePeer. Idempotent: an absent peer is success.
type DeletePeer struct {
	Addr netip.Addr
	Gen  uint64
}

// SetPolicy installs the neighbor's own defined sets and import/export
// policies (AddDefinedSet, AddPolicy, SetPolicyAssignment), replacing what
// it had. Idempotent.
type SetPolicy struct {
	Addr   netip.Addr
	Policy state.Policy
	Gen    uint64
}

// DeletePolicy removes the neighbor's own policies and defined sets, after
// its peer is gone. Idempotent; never "in use", as nothing is shared.
type DeletePolicy struct {
	Addr netip.Addr
	Gen  uint64
}

// Change is one differing neighbor setting, printable without secrets.
type Change struct {
	Field    string
	Old, New string
	Reset    bool
}

func (c Change) String() string { return c.Field + " " + c.Old + "->" + c.New }

func (e StartServer) String() string {
	s := fmt.Sprintf("start-server as=%d router-id=%s listen-port=%d", e.Server.ASN, e.Server.RouterID, e.Server.ListenPort)
	if l := e.Server.Listen(); l != nil {
		s += " listen-addresses=" + strings.Join(l, ",")
	}
	return s
}

func (e RestartServer) String() string {
	var parts []string
	if e.Old.ASN != e.New.ASN {
		parts = append(parts, fmt.Sprintf("as %d->%d", e.Old.ASN, e.New.ASN))
	}
	if e.Old.RouterID != e.New.RouterID {
		parts = append(parts, fmt.Sprintf("router-id %s->%s", e.Old.RouterID, e.New.RouterID))
	}
	if e.Old.ListenPort != e.New.ListenPort {
		parts = append(parts, fmt.Sprintf("listen-port %d->%d", e.Old.ListenPort, e.New.ListenPort))
	}
	if e.Old.ListenAddresses != e.New.ListenAddresses {
		parts = append(parts, fmt.Sprintf("listen-addresses %s->%s", listenText(e.Old), listenText(e.New)))
	}
	return "restart-server " + strings.Join(parts, ", ") + ": every session drops"
}

func (e StopServer) String() string    { return "stop-server: every session drops" }
func (e WatchSecret) String() string   { return "watch-secret " + e.Namespace + "/" + e.Name }
func (e UnwatchSecret) String() string { return "unwatch-secret " + e.Namespace + "/" + e.Name }
func (WatchServices) String() string   { return "watch-services" }
func (UnwatchServices) String() string { return "unwatch-services" }

func (e AddPeer) String() string {
	return fmt.Sprintf("add-peer %s gen=%d %s", e.Neighbor.Address, e.Gen, Summary(e.Neighbor))
}

func (e UpdatePeer) String() string {
	kind := "in-place"
	if e.Reset {
		kind = "session-reset"
	}
	what := "no change"
	if len(e.Changes) > 0 {
		parts := make([]string, len(e.Changes))
		for i, c := range e.Changes {
			parts[i] = c.String()
		}
		what = strings.Join(parts, ", ")
	}
	return fmt.Sprintf("update-peer %s gen=%d %s: %s", e.New.Address, e.Gen, kind, what)
}

func (e DeletePeer) String() string   { return fmt.Sprintf("delete-peer %s gen=%d", e.Addr, e.Gen) }
func (e RecreatePeer) String() string { return "recreate-peer " + e.Addr.String() }
func (e DeletePolicy) String() string { return fmt.Sprintf("delete-policy %s gen=%d", e.Addr, e.Gen) }

func (e SetPolicy) String() string {
	export := rules(e.Policy.Export)
	if e.Policy.CalicoExport {
		export += "+calico" // then Calico's base rules and reject (docs/routes.md §8.3)
	}
	return fmt.Sprintf("set-policy %s gen=%d import=%s export=%s next-hop=%s",
		e.Addr, e.Gen, rules(e.Policy.Import), export, orDash(e.Policy.NextHop))
}

func (StartServer) Address() netip.Addr     { return netip.Addr{} }
func (RestartServer) Address() netip.Addr   { return netip.Addr{} }
func (StopServer) Address() netip.Addr      { return netip.Addr{} }
func (WatchSecret) Address() netip.Addr     { return netip.Addr{} }
func (UnwatchSecret) Address() netip.Addr   { return netip.Addr{} }
func (WatchServices) Address() netip.Addr   { return netip.Addr{} }
func (UnwatchServices) Address() netip.Addr { return netip.Addr{} }
func (e AddPeer) Address() netip.Addr       { return e.Neighbor.Address }
func (e UpdatePeer) Address() netip.Addr    { return e.New.Address }
func (e DeletePeer) Address() netip.Addr    { return e.Addr }
func (e RecreatePeer) Address() netip.Addr  { return e.Addr }
func (e SetPolicy) Address() netip.Addr     { return e.Addr }
func (e DeletePolicy) Address() netip.Addr  { return e.Addr }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func rules(rs []state.Rule) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = RuleString(r)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// RuleString is a rule in one line: "accept 10.0.0.0/8 In len 16-24 (f1)".
func RuleString(r state.Rule) string {
	var b strings.Builder
	b.WriteString(r.Action)
	if r.FromRemotePeers {
		b.WriteString(" from-remote-peers")
	}
	if r.Prefix.IsValid() {
		fmt.Fprintf(&b, " %s %s", r.Operator, r.Prefix)
	}
	if r.MinLen != 0 || r.MaxLen != 0 {
		fmt.Fprintf(&b, " len %d-%d", r.MinLen, r.MaxLen)
	}
	if !r.Prefix.IsValid() && !r.FromRemotePeers {
		b.WriteString(" all")
	}
	fmt.Fprintf(&b, " (%s)", r.Filter)
	return b.String()
}

// listenText is a server's listen addresses, or "all".
func listenText(s state.Server) string {
	if l := s.Listen(); l != nil {
		return strings.Join(l, ",")
	}
	return "all"
}
