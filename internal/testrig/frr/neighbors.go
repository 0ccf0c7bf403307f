package frr

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"time"

	"github.com/peeragent/peeragent/internal/testrig/daemon"
)

// pollInterval is how often the Wait methods ask bgpd.
const pollInterval = 100 * time.Millisecond

// NeighborState is one neighbor as `show bgp neighbors json` shows it.
//
// The evidence that a session was not reset between two readings is
// ConnectionsEstablished: FRR's count of the times the session entered
// Established, kept across resets for as long as the neighbor is
// configured (deleting and re-adding the neighbor, or restarting bgpd,
// starts it at 0 again). ConnectionsDropped counts the exits from
// Established. Uptime and EstablishedAt move too, but EstablishedAt has a
// one-second resolution.
type NeighborState struct {
	// Address is the neighbor's address as FRR prints it.
	Address     string `json:"-"`
	Description string `json:"nbrDesc"`
	RemoteAS    uint32 `json:"remoteAs"`
	LocalAS     uint32 `json:"localAs"`
	// State is the BGP FSM state: Idle, Connect, Active, OpenSent,
	// OpenConfirm, Established (Clearing and Deleted in passing).
	State                  string `json:"bgpState"`
	RemoteRouterID         string `json:"remoteRouterId"`
	ConnectionsEstablished int    `json:"connectionsEstablished"`
	ConnectionsDropped     int    `json:"connectionsDropped"`
	// LastResetReason is why the session last went down ("BGP
	// Notification send" after a password change, "Peer closed the session"...). FRR sets one even
	// before the first session ("No AFI/SAFI activated for peer").
	LastResetReason string `json:"lastResetDueTo"`
	// Hostname is what the peer sent in its hostname capability.
	Hostname string `json:"hostname"`
	// Local and foreign ends of the TCP connection; "Unknown" and -1
	// without one.
	HostLocal   string `json:"hostLocal"`
	PortLocal   int    `json:"portLocal"`
	HostForeign string `json:"hostForeign"`
	PortForeign int    `json:"portForeign"`
	// NexthopGlobal and NexthopLocal are the IPv6 next hops bgpd puts on
	// the routes it sends this neighbor ("::" when none): the global one,
	// and the link-local one of the interface the neighbor is reached
	// through, which bgpd sends after the global one when the session is
	// on a shared network (it needs zebra to know the interfaces).
	NexthopGlobal string `json:"nexthopGlobal"`
	NexthopLocal  string `json:"nexthopLocal"`
	// Connection is "sharedNetwork" when the neighbor's address is on a
	// subnet of one of bgpd's interfaces, else "nonSharedNetwork".
	Connection string `json:"bgpConnection"`
	// Messages counts the messages of all sessions so far (a reset
	// shows as one more OPEN and NOTIFICATION each way).
	Messages MessageStats `json:"messageStats"`
	// AddressFamilies are by FRR's name, "ipv4Unicast".
	AddressFamilies map[string]AddressFamily `json:"addressFamilyInfo"`

	// Uptime is how long the session has been Established; zero when
	// it is not.
	Uptime time.Duration `json:"-"`
	// EstablishedAt is when the session became Established (seconds).
	EstablishedAt time.Time `json:"-"`
	// MD5 says the neighbor has a password (authenticationEnabled).
	MD5 bool `json:"-"`
	// Raw is the neighbor's whole JSON object, for anything not above.
	Raw json.RawMessage `json:"-"`
}

// MessageStats are a neighbor's message counters.
type MessageStats struct {
	OpensSent         int `json:"opensSent"`
	OpensRecv         int `json:"opensRecv"`
	NotificationsSent int `json:"notificationsSent"`
	NotificationsRecv int `json:"notificationsRecv"`
	UpdatesSent       int `json:"updatesSent"`
	UpdatesRecv       int `json:"updatesRecv"`
	KeepalivesSent    int `json:"keepalivesSent"`
	KeepalivesRecv    int `json:"keepalivesRecv"`
	TotalSent         int `json:"totalSent"`
	TotalRecv         int `json:"totalRecv"`
}

// AddressFamily are a neighbor's prefix counters in one address family.
type AddressFamily struct {
	AcceptedPrefixes int `json:"acceptedPrefixCounter"`
	SentPrefixes     int `json:"sentPrefixCounter"`
}

// timing are the fields NeighborState converts.
type timing struct {
	UpMsec  int64 `json:"bgpTimerUpMsec"`
	UpEpoch int64 `json:"bgpTimerUpEstablishedEpoch"`
	Auth    int   `json:"authenticationEnabled"`
}

// Established reports whether the session is up.
func (n NeighborState) Established() bool { return n.State == "Established" }

// SameSessionAs reports whether n is the session that was up in before:
// Established in both, and no establishment or drop in between.
func (n NeighborState) SameSessionAs(before NeighborState) bool {
	return n.Established() && before.Established() &&
		n.ConnectionsEstablished == before.ConnectionsEstablished &&
		n.ConnectionsDropped == before.ConnectionsDropped
}

func (n NeighborState) String() string {
	return fmt.Sprintf("%s %s (established %d, dropped %d, up %v, last reset %q)",
		n.Address, n.State, n.ConnectionsEstablished, n.ConnectionsDropped, n.Uptime, n.LastResetReason)
}

// ParseNeighbors reads the output of `show bgp neighbors json`: an object
// keyed by neighbor address.
func ParseNeighbors(out string) (map[string]NeighborState, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		return nil, fmt.Errorf("frrtest: show bgp neighbors json: %w: %.200q", err, out)
	}
	all := make(map[string]NeighborState, len(raw))
	for addr, obj := range raw {
		n, err := parseNeighbor(addr, obj)
		if err != nil {
			return nil, err
		}
		all[addr] = n
	}
	return all, nil
}

func parseNeighbor(addr string, obj json.RawMessage) (NeighborState, error) {
	if !bytes.HasPrefix(bytes.TrimSpace(obj), []byte("{")) {
		return NeighborState{}, fmt.Errorf("frrtest: show bgp neighbors json: %q is %.100s, not a neighbor", addr, obj)
	}
	var n NeighborState
	var tm timing
	if err := json.Unmarshal(obj, &n); err != nil {
		return n, fmt.Errorf("frrtest: neighbor %s: %w", addr, err)
	}
	if err := json.Unmarshal(obj, &tm); err != nil {
		return n, fmt.Errorf("frrtest: neighbor %s: %w", addr, err)
	}
	n.Address, n.Raw, n.MD5 = addr, obj, tm.Auth != 0
	if n.Established() {
		n.Uptime = time.Duration(tm.UpMsec) * time.Millisecond
		n.EstablishedAt = time.Unix(tm.UpEpoch, 0)
	}
	return n, nil
}

// Neighbors is every neighbor as `show bgp neighbors json` shows it, by
// address.
func (f *FRR) Neighbors() (map[string]NeighborState, error) {
	out, err := f.Exec("show bgp neighbors json")
	if err != nil {
		return nil, err
	}
	return ParseNeighbors(out)
}

// Neighbor is one neighbor by address.
func (f *FRR) Neighbor(addr netip.Addr) (NeighborState, error) {
	all, err := f.Neighbors()
	if err != nil {
		return NeighborState{}, err
	}
	n, ok := all[addr.String()]
	if !ok {
		return NeighborState{}, fmt.Errorf("frrtest: %s has no neighbor %v", f, addr)
	}
	return n, nil
}

// Establishments is the neighbor's ConnectionsEstablished: how many times
// its session entered Established since the neighbor was configured.
// When bgpd cannot be asked, it marks the test failed (t.Errorf, so it is
// safe from any goroutine) and returns -1.
func (f *FRR) Establishments(addr netip.Addr) int {
	n, err := f.Neighbor(addr)
	if err != nil {
		f.t.Errorf("frrtest: Establishments(%v): %v", addr, err)
		return -1
	}
	return n.ConnectionsEstablished
}

// WaitEstablished polls until the neighbor's session is Established and
// returns its state, or fails when ctx ends (the error carries the last
// state seen) or bgpd exits.
func (f *FRR) WaitEstablished(ctx context.Context, addr netip.Addr) (NeighborState, error) {
	return f.WaitNeighbor(ctx, addr, NeighborState.Established)
}

// WaitNeighbor polls the neighbor until ok holds for it, as
// WaitEstablished does for Established.
func (f *FRR) WaitNeighbor(ctx context.Context, addr netip.Addr, ok func(NeighborState) bool) (NeighborState, error) {
	get := func() (NeighborState, error) { return f.Neighbor(addr) }
	n, err := daemon.Poll(ctx, f.proc, pollInterval, get, ok)
	if err != nil {
		return n, fmt.Errorf("frrtest: %s: waiting for %v: %w", f, addr, err)
	}
	return n, nil
}
