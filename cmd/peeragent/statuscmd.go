package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

func statusCmd(args []string, stdout, stderr io.Writer) error {
	c := newClientFlags("status", "Usage: peeragent status [flags] [ADDRESS]\n\nWith ADDRESS, one neighbor in detail (timers, capabilities, paths, last error).",
		"output format: text or json", stderr)
	fs, addr, out := c.fs, c.addr, c.out
	if err := fs.Parse(args); err != nil {
		return err
	}
	var neighbor string
	if fs.NArg() > 0 { // flags may follow the address
		neighbor = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("one neighbor address at most, got %q", append([]string{neighbor}, fs.Args()...))
		}
	}
	if err := c.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if neighbor != "" {
		a, err := netip.ParseAddr(neighbor)
		if err != nil {
			return fmt.Errorf("%q is not an IP address", neighbor)
		}
		d, err := fetchNeighbor(ctx, *addr, a)
		if err != nil {
			return err
		}
		if *out == "json" {
			return writeIndented(stdout, d)
		}
		WriteNeighborDetail(stdout, d, time.Now())
		return nil
	}
	d, err := fetchState(ctx, *addr)
	if err != nil {
		return err
	}
	d.counts = fetchPathCounts(ctx, *addr, d)
	if *out == "json" {
		return writeIndented(stdout, statusJSON(d))
	}
	WriteStatus(stdout, d, time.Now())
	return nil
}

// StatusNeighbor is one row of `peeragent status -o json`: a stable
// interface, the table's columns with their full values.
type StatusNeighbor struct {
	Address        string    `json:"address"`
	PeerASN        uint32    `json:"peerASN"`
	Origin         string    `json:"origin"`
	Phase          string    `json:"phase"`
	BGP            string    `json:"bgp"`
	Since          time.Time `json:"since,omitzero"`
	Flaps          int       `json:"flaps"`
	LastDownReason string    `json:"lastDownReason,omitempty"`
	Attempts       int       `json:"attempts"`
	LastError      string    `json:"lastError,omitempty"`
	Password       string    `json:"password"`
	Waiting        string    `json:"waiting,omitempty"`
	Route          string    `json:"route,omitempty"`
	// Advertised and Received are the speaker's path counts for the
	// neighbor: paths sent to it and paths it sent (before the import
	// policy); absent when the speaker does not have it or cannot say.
	Advertised *uint64 `json:"advertised,omitempty"`
	Received   *uint64 `json:"received,omitempty"`
}

// Status is `peeragent status -o json`.
type Status struct {
	Node   string       `json:"node"`
	Server state.Server `json:"server"`
	// OwnPaths counts the paths this node advertises (docs/routes.md §8.1).
	OwnPaths  int              `json:"ownPaths"`
	Neighbors []StatusNeighbor `json:"neighbors"`
	Problems  []state.Problem  `json:"problems"`
}

func statusJSON(d statusDump) Status {
	sessions := map[string]*state.Session{}
	for _, s := range d.Sessions {
		sessions[s.Address.String()] = s
	}
	st := Status{Node: d.Node, Server: d.Server, OwnPaths: len(d.Advertised), Neighbors: []StatusNeighbor{}, Problems: d.Problems}
	if st.Problems == nil {
		st.Problems = []state.Problem{}
	}
	hostRoutes := map[string]*state.TableRoute{}
	for _, r := range d.Routes {
		if r.Prefix.IsSingleIP() {
			hostRoutes[r.Prefix.Addr().String()] = r
		}
	}
	for _, n := range d.Neighbors {
		row := StatusNeighbor{Address: n.Address, PeerASN: n.PeerASN, Origin: n.Origin, Password: n.Password, Waiting: n.Waiting}
		if s := sessions[n.Address]; s != nil {
			row.Phase, row.BGP, row.Since, row.Flaps = s.Phase.String(), s.BGP, s.Since, s.Flaps
			row.LastDownReason, row.Attempts, row.LastError = s.LastDownReason, s.Attempts, s.LastError
		}
		if r := hostRoutes[n.Address]; r != nil && r.Origin == n.Origin {
			row.Route = string(r.Phase)
		}
		if n.Waiting != "" {
			row.Phase = "waiting"
		}
		if c, ok := d.counts[n.Address]; ok {
			recv := c.Received
			row.Advertised, row.Received = c.Advertised, &recv
		}
		st.Neighbors = append(st.Neighbors, row)
	}
	return st
}

// neighborDetail is what GET /neighbors/ADDRESS serves (agent.NeighborDetail)
// with the password kept as the fingerprint string the agent sent.
type neighborDetail struct {
	Neighbor *struct {
		Address  string   `json:"address"`
		Port     uint16   `json:"port"`
		PeerASN  uint32   `json:"peerASN"`
		LocalASN uint32   `json:"localASN"`
		Origin   string   `json:"origin"`
		Passive  bool     `json:"passive"`
		Password string   `json:"password"`
		Families []string `json:"families"`
		Filters  []string `json:"filters"`
		Waiting  string   `json:"waiting,omitempty"`
	} `json:"neighbor,omitempty"`
	Session      *state.Session        `json:"session,omitempty"`
	Problems     []state.Problem       `json:"problems,omitempty"`
	Route        *state.TableRoute     `json:"route,omitempty"`
	Routes       *state.NeighborRoutes `json:"routes,omitempty"`
	Speaker      *effects.NeighborInfo `json:"speaker,omitempty"`
	SpeakerError string                `json:"speakerError,omitempty"`
}

func fetchNeighbor(ctx context.Context, addr string, a netip.Addr) (neighborDetail, error) {
	var d neighborDetail
	err := agent.Fetch(ctx, nil, addr, "/neighbors/"+a.String(), &d)
	if se := (*agent.StatusError)(nil); errors.As(err, &se) && se.Code == http.StatusNotFound {
		return d, fmt.Errorf("the agent at %s has no neighbor %s", addr, a)
	}
	return d, err
}

// WriteNeighborDetail prints one neighbor for people.
func WriteNeighborDetail(w io.Writer, d neighborDetail, now time.Time) {
	row := func(k, format string, a ...any) { fmt.Fprintf(w, "  %-14s"+format+"\n", append([]any{k}, a...)...) }
	ago := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return now.Sub(t).Round(time.Second).String() + " ago"
	}
	if n := d.Neighbor; n != nil {
		fmt.Fprintf(w, "neighbor %s: AS %d, local AS %d, port %d, origin %s\n", n.Address, n.PeerASN, n.LocalASN, n.Port, printable(n.Origin))
		row("password", "%s", orDash(n.Password))
		row("passive", "%v", n.Passive)
		row("families", "%s", orDash(strings.Join(n.Families, ", ")))
		row("filters", "%s", printable(orDash(strings.Join(n.Filters, ", "))))
		if n.Waiting != "" {
			row("waiting for", "%s", printable(n.Waiting))
		}
	} else {
		fmt.Fprintln(w, "neighbor (not in the agent's State; the speaker still has it)")
	}
	if s := d.Session; s != nil {
		row("phase", "%s, since %s", s.Phase, ago(s.Since))
		row("bgp", "%s", orDash(s.BGP))
		row("flaps", "%d, last down: %s", s.Flaps, printable(orDash(s.LastDownReason)))
		row("attempts", "%d, last error: %s", s.Attempts, printable(orDash(s.LastError)))
	}
	if r := d.Route; r != nil {
		what := r.Prefix.String() + " (none)"
		if t := r.Target(); t != nil {
			what = t.String()
		}
		row("route", "%s, %s%s", what, r.Phase, routeError(r))
	}
	switch sp := d.Speaker; {
	case sp != nil:
		row("speaker", "%s, router ID %s, up %s, down %s", sp.State, orDash(sp.RouterID), ago(sp.Uptime), ago(sp.Downtime))
		neg := "-"
		if sp.NegotiatedHoldTime > 0 {
			neg = fmt.Sprintf("%ds", sp.NegotiatedHoldTime)
		}
		row("timers", "hold %ds (negotiated %s), keepalive %ds, connect retry %ds", sp.HoldTime, neg, sp.KeepaliveInterval, sp.ConnectRetry)
		row("capabilities", "local: %s", orDash(strings.Join(sp.LocalCapabilities, ", ")))
		row("", "remote: %s", orDash(strings.Join(sp.RemoteCapabilities, ", ")))
		adv := "-"
		if sp.Advertised != nil {
			adv = fmt.Sprint(*sp.Advertised)
		}
		row("paths", "received %d, accepted %d, advertised %s", sp.Received, sp.Accepted, adv)
		if rs := d.Routes; rs != nil {
			row("routes", "received %d, accepted %d, installed %d, refused %d", sp.Received, sp.Accepted, rs.Installed, rs.Refused)
		}
		row("messages", "received %d, sent %d", sp.MessagesReceived, sp.MessagesSent)
	case d.SpeakerError != "":
		row("speaker", "unreadable: %s", d.SpeakerError)
		routesRow(row, d.Routes)
	default:
		row("speaker", "does not have this neighbor")
		routesRow(row, d.Routes)
	}
	writeProblems(w, d.Problems)
}

// routesRow prints the route counts when the speaker's are unknown.
func routesRow(row func(string, string, ...any), rs *state.NeighborRoutes) {
	if rs != nil {
		row("routes", "received -, accepted -, installed %d, refused %d", rs.Installed, rs.Refused)
	}
}

func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func routeError(r *state.TableRoute) string {
	if r.LastError == "" {
		return ""
	}
	return fmt.Sprintf(" (attempts %d, last error: %s)", r.Attempts, printable(r.LastError))
}
