package effects

import (
	"fmt"
	"net/netip"
)

// Kind is what an effect does. Its String is the first word of the
// effect's String ("add-peer"), the name metrics and logs use for it.
type Kind uint8

// The effect kinds, one per effect type.
const (
	KindStartServer Kind = iota + 1
	KindRestartServer
	KindStopServer
	KindWatchSecret
	KindUnwatchSecret
	KindAddPeer
	KindUpdatePeer
	KindDeletePeer
	KindSetPolicy
	KindDeletePolicy
	KindReplaceRoute
	KindRemoveRoute
	KindAddPath
	KindDeletePath
	KindSetAdd
	KindSetDel
	KindResetOut
	KindWatchServices
	KindUnwatchServices
	KindRescanRoutes
	KindAlarm
	KindRecreatePeer
)

var kindNames = [...]string{
	KindStartServer: "start-server", KindRestartServer: "restart-server", KindStopServer: "stop-server",
	KindWatchSecret: "watch-secret", KindUnwatchSecret: "unwatch-secret",
	KindAddPeer: "add-peer", KindUpdatePeer: "update-peer", KindDeletePeer: "delete-peer",
	KindSetPolicy: "set-policy", KindDeletePolicy: "delete-policy",
	KindReplaceRoute: "route-replace", KindRemoveRoute: "route-remove",
	KindAddPath: "add-path", KindDeletePath: "delete-path", KindSetAdd: "set-add", KindSetDel: "set-del",
	KindResetOut: "reset-out", KindWatchServices: "watch-services", KindUnwatchServices: "unwatch-services",
	KindRescanRoutes: "route-rescan", KindAlarm: "alarm", KindRecreatePeer: "recreate-peer",
}

// Kinds lists every kind, in declaration order.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kindNames)-1)
	for k := KindStartServer; int(k) < len(kindNames); k++ {
		out = append(out, k)
	}
	return out
}

func (k Kind) String() string {
	if k == 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("kind(%d)", uint8(k))
	}
	return kindNames[k]
}

// MarshalText writes the kind's name, so JSON and YAML show "add-peer".
func (k Kind) MarshalText() ([]byte, error) {
	if k == 0 || int(k) >= len(kindNames) {
		return nil, fmt.Errorf("unknown effect kind %d", uint8(k))
	}
	return []byte(kindNames[k]), nil
}

// UnmarshalText reads a kind's name; an unknown name is an error.
func (k *Kind) UnmarshalText(b []byte) error {
	for _, c := range Kinds() {
		if kindNames[c] == string(b) {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("unknown effect kind %q", b)
}

// Speaker reports whether the GoBGP executor carries out the kind (the
// dataplane executor carries out routes; the watch layer, secret watches;
// the agent's alarm, alarms).
func (k Kind) Speaker() bool {
	return !k.Dataplane() && !k.Watch() && k != KindAlarm
}

// Watch reports whether the watch layer carries the effect out (secret
// and service watches).
func (k Kind) Watch() bool {
	return k == KindWatchSecret || k == KindUnwatchSecret || k == KindWatchServices || k == KindUnwatchServices
}

// Dataplane reports whether the dataplane executor (vpp, linux or none)
// carries out the kind: the route table's entries and the rescans
// (docs/routes.md §9.7).
func (k Kind) Dataplane() bool {
	return k == KindReplaceRoute || k == KindRemoveRoute || k == KindRescanRoutes
}

// Peer reports whether the kind's result is a PeerApplied or
// PeerApplyFailed for its address and generation: the neighbor's own
// speaker calls (peer and policy), not the server's.
func (k Kind) Peer() bool { return k >= KindAddPeer && k <= KindDeletePolicy }

// Ref is what an effect is for: its kind, the neighbor address (zero for
// server and secret-watch effects) and the generation its result must
// carry (zero where there is none). One method on every effect gives it,
// so callers never switch on the effect types to find them.
type Ref struct {
	Kind Kind
	Addr netip.Addr
	Gen  uint64
}

func (StartServer) Ref() Ref     { return Ref{Kind: KindStartServer} }
func (RestartServer) Ref() Ref   { return Ref{Kind: KindRestartServer} }
func (StopServer) Ref() Ref      { return Ref{Kind: KindStopServer} }
func (WatchSecret) Ref() Ref     { return Ref{Kind: KindWatchSecret} }
func (UnwatchSecret) Ref() Ref   { return Ref{Kind: KindUnwatchSecret} }
func (WatchServices) Ref() Ref   { return Ref{Kind: KindWatchServices} }
func (UnwatchServices) Ref() Ref { return Ref{Kind: KindUnwatchServices} }
func (e AddPeer) Ref() Ref       { return Ref{KindAddPeer, e.Neighbor.Address, e.Gen} }
func (e UpdatePeer) Ref() Ref    { return Ref{KindUpdatePeer, e.New.Address, e.Gen} }
func (e DeletePeer) Ref() Ref    { return Ref{KindDeletePeer, e.Addr, e.Gen} }
func (e RecreatePeer) Ref() Ref  { return Ref{KindRecreatePeer, e.Addr, 0} }
func (e SetPolicy) Ref() Ref     { return Ref{KindSetPolicy, e.Addr, e.Gen} }
func (e DeletePolicy) Ref() Ref  { return Ref{KindDeletePolicy, e.Addr, e.Gen} }
