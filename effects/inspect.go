package effects

import (
	"context"
	"net/netip"
	"time"
)

// NeighborInfo is the speaker's own view of one neighbor, as a running
// agent reads it for its metrics and for `peeragent status ADDRESS`. It
// never holds a password.
type NeighborInfo struct {
	Address netip.Addr `json:"address"`
	// State is the BGP session state (idle, connect, active, opensent,
	// openconfirm, established).
	State string `json:"state"`
	// Received and Accepted count the paths the neighbor sent, before and
	// after the import policy, over every family; Advertised counts the
	// paths sent to it, and is nil unless asked for (it costs a walk of the
	// neighbor's Adj-RIB-Out).
	Received   uint64  `json:"received"`
	Accepted   uint64  `json:"accepted"`
	Advertised *uint64 `json:"advertised,omitempty"`
	// Timers in seconds: the configured hold time and keepalive interval,
	// and the hold time negotiated with the neighbor (0 before OPEN).
	HoldTime           uint64 `json:"holdTime"`
	KeepaliveInterval  uint64 `json:"keepaliveInterval"`
	NegotiatedHoldTime uint64 `json:"negotiatedHoldTime,omitempty"`
	ConnectRetry       uint64 `json:"connectRetry,omitempty"`
	// Uptime is when the session last came up (zero: never); Downtime
	// when it last went down.
	Uptime   time.Time `json:"uptime,omitzero"`
	Downtime time.Time `json:"downtime,omitzero"`
	// LocalCapabilities and RemoteCapabilities are the capabilities each
	// side advertised in its OPEN ("route-refresh", "multi-protocol
	// ipv4-unicast", ...), empty before OPEN.
	LocalCapabilities  []string `json:"localCapabilities,omitempty"`
	RemoteCapabilities []string `json:"remoteCapabilities,omitempty"`
	RouterID           string   `json:"routerID,omitempty"`
	MessagesReceived   uint64   `json:"messagesReceived"`
	MessagesSent       uint64   `json:"messagesSent"`
}

// Inspector reads the speaker's view of its neighbors (implemented by the
// GoBGP executor). Inspect lists every neighbor when addr is the zero
// Addr, else only the one at addr (none if it is not configured);
// advertised asks for the Advertised counts. A stopped speaker has no
// neighbors.
type Inspector interface {
	Inspect(ctx context.Context, addr netip.Addr, advertised bool) ([]NeighborInfo, error)
}
