// Package floor is the GoBGP floor of the mesh simulation (tools/meshsim,
// speaker "gobgp"): the same GoBGP v4.8.0 the agent embeds, doing only
// what a node's speaker must to converge in the node-to-node mesh, so
// that the agent's CPU and memory can be set against what GoBGP itself
// spends for the same calls (docs/performance.md "The GoBGP floor of the
// mesh"). Its command is ./cmd/meshsim-floor; meshsim builds it as it
// builds the agent.
//
// Identical to the agent (peeragent run --dataplane linux, as meshsim runs
// it), checked by meshsim's TestFloorConfiguredAsTheAgent against the
// agent's reducer and executor for the same manifests:
//   - the speaker's global config (AS, router ID, listen address and port,
//     the RIB's families ipv4-unicast and ipv6-unicast, UseMultiplePaths);
//   - the shared export policy, its prefix and neighbor sets and their
//     assignment to the global table (gobgp.SharedRequests), with the two
//     members the agent adds: its own block (len 26-32) and the pool
//     (len 16-32);
//   - its own block as one AddPath (ORIGIN IGP, NEXT_HOP its address);
//   - every mesh neighbor's AddPeer request (gobgp.CallsFor of the
//     neighbor as the reducer derives it: iBGP, passive toward the peers
//     whose address text sorts higher as Calico does, the source address,
//     graceful restart 120 s with long-lived GR and notification, connect
//     retry 5 s, idle hold after reset 1 s, ipv4-unicast with the MP
//     graceful-restart flag, the prefix limit, 20,000 by default);
//   - GoBGP's log at Warn (the agent's --log-level info gives GoBGP Warn);
//   - one WatchEvent with the peer and best-path callbacks (the initial
//     snapshot too) for the sessions and the routes;
//   - kernel routes in the main table with protocol 201 and metric 1024:
//     the own block as a blackhole, every other block via its next hop
//     (RouteReplace on one persistent netlink handle, only when the route
//     changes);
//   - the agent's start-phase GC policy (GOGC 400 and 64 MiB of headroom
//     until 10 s without change; internal/gcstart), unless -gc-start-percent 0.
//
// Different: no manifest directory, reducer, State, Diff, journal, metrics
// or admin HTTP server (the floor's serves only GET /established, the
// count of Established sessions, where meshsim asks the agent's /metrics);
// no End-of-RIB watch, route rescan or sweep of held routes; routes are
// replaced without the agent's exclusive add first; a neighbor whose
// session is lost for graceful restart is not configured anew (the
// agent's recreate-peer, docs/performance.md "The restart gap"), so the
// floor's re-convergence is stock GoBGP's, with its 5 s idle hold; the GC
// start phase ends 10 s after GoBGP's last event, the agent's 10 s after
// its State's last change. MaxPrefixes 0 configures no prefix limit (the
// agent has no such setting), to measure the share of the limit's check.
package floor

import (
	"context"
	"errors"
	"fmt"
	"github.com/peeragent/peeragent/internal/gcstart"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/config/oc"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/peeragent/peeragent/effects/gobgp"
	"github.com/peeragent/peeragent/state"
)

// The agent's defaults that the mesh uses.
const (
	// Port is BGP's port.
	Port = 179
	// GracefulRestartSeconds is Calico's mesh default restart time.
	GracefulRestartSeconds = 120
	// Protocol and Metric are the agent's route ownership key (effects/linux).
	Protocol = 201
	Metric   = 1024
)

// Config is one node's floor speaker.
type Config struct {
	ASN   uint32
	Addr  netip.Addr   // router ID, listen and source address, next hop of Block
	Block netip.Prefix // the node's pod block
	Pool  netip.Prefix // the IPPool the blocks come from
	Peers []netip.Addr // every other node
	// MaxPrefixes is each neighbor's prefix limit; 0: none.
	MaxPrefixes uint32
	// HTTP is the address whose /established serves the number of
	// Established sessions as text; "": none.
	HTTP string
	// GCStartPercent is the agent's --gc-start-percent (400 by default):
	// its start-phase GC policy (internal/gcstart); 0: Go's default GC throughout.
	GCStartPercent int
	Log            *slog.Logger // GoBGP's log, at Warn; nil: discarded
}

// Neighbor is peer as the agent's reducer derives a mesh neighbor.
func (c Config) Neighbor(peer netip.Addr) *state.Neighbor {
	return &state.Neighbor{
		Address: peer, Port: Port, PeerASN: c.ASN, LocalASN: c.ASN, Origin: "mesh",
		// Calico: the side whose peer's address text sorts higher waits.
		Passive:                peer.String() > c.Addr.String(),
		SourceAddress:          c.Addr,
		GracefulRestartSeconds: GracefulRestartSeconds,
		Families:               []string{"ipv4-unicast"},
		Filters:                []string{},
		Policy:                 state.Policy{CalicoExport: true},
		MaxPrefixes:            c.MaxPrefixes,
	}
}

// Requests are the GoBGP calls the floor makes, in its order.
type Requests struct {
	Start  *api.StartBgpRequest
	Shared gobgp.Shared
	Sets   []*api.AddDefinedSetRequest // the own block and the pool
	Path   *apiutil.Path               // the own block
	Peers  []*api.AddPeerRequest
}

// Requests builds the calls of c.
func (c Config) Requests() (Requests, error) {
	var fams []uint32
	for _, n := range []string{"ipv4-unicast", "ipv6-unicast"} {
		fams = append(fams, uint32(oc.AfiSafiTypeToIntMap[oc.AfiSafiType(n)]))
	}
	r := Requests{
		Start: &api.StartBgpRequest{Global: &api.Global{Asn: c.ASN, RouterId: c.Addr.String(), ListenPort: Port,
			ListenAddresses: []string{c.Addr.String()}, Families: fams, UseMultiplePaths: true}},
		Shared: gobgp.SharedRequests(),
	}
	for _, m := range []struct {
		set      string
		p        netip.Prefix
		min, max int
	}{{state.SetOwn + "v4", c.Block, c.Block.Bits(), 32}, {state.SetPools + "v4", c.Pool, c.Pool.Bits(), 32}} {
		r.Sets = append(r.Sets, &api.AddDefinedSetRequest{DefinedSet: &api.DefinedSet{
			DefinedType: api.DefinedType_DEFINED_TYPE_PREFIX, Name: m.set,
			Prefixes: []*api.Prefix{{IpPrefix: m.p.String(), MaskLengthMin: uint32(m.min), MaskLengthMax: uint32(m.max)}}}})
	}
	nlri, err := bgp.NewIPAddrPrefix(c.Block)
	if err != nil {
		return r, err
	}
	nh, err := bgp.NewPathAttributeNextHop(c.Addr)
	if err != nil {
		return r, err
	}
	r.Path = &apiutil.Path{Family: bgp.RF_IPv4_UC, Nlri: nlri,
		Attrs: []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(bgp.BGP_ORIGIN_ATTR_TYPE_IGP), nh}}
	for _, p := range c.Peers {
		calls, err := gobgp.CallsFor(c.Neighbor(p))
		if err != nil {
			return r, err
		}
		r.Peers = append(r.Peers, calls.Peer)
	}
	return r, nil
}

// Run starts the speaker, makes the calls and keeps the sessions and the
// kernel routes until ctx ends.
func Run(ctx context.Context, c Config) error {
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	gc := gcstart.New(c.GCStartPercent, log)    // first: the start allocates from here on
	go gc.Run(ctx, func() bool { return true }) //nolint:errcheck // it returns nil
	reqs, err := c.Requests()
	if err != nil {
		return err
	}
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer h.Close()
	k := &kernel{h: h, sets: map[netip.Prefix][]hop{}, installed: map[netip.Prefix][]netip.Addr{}}
	if err := h.RouteReplace(k.route(c.Block, nil)); err != nil {
		return fmt.Errorf("blackhole %s: %w", c.Block, err)
	}
	level := &slog.LevelVar{}
	level.Set(slog.LevelWarn)
	bgpS := server.NewBgpServer(server.LoggerOption(log, level))
	go bgpS.Serve()
	if err := bgpS.StartBgp(ctx, reqs.Start); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	defer bgpS.Stop()
	ss := &sessions{state: map[netip.Addr]bool{}}
	if c.HTTP != "" {
		ln, err := net.Listen("tcp", c.HTTP)
		if err != nil {
			return fmt.Errorf("http: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/established", ss)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
	}
	err = bgpS.WatchEvent(ctx, server.WatchEventMessageCallbacks{
		OnPeerUpdate: func(ev *apiutil.WatchEventMessage_PeerEvent, _ time.Time) { gc.Touch(); ss.update(ev) },
		OnBestPath:   func(paths []*apiutil.Path, _ time.Time) { gc.Touch(); k.best(paths, log) },
	}, server.WatchPeer(), server.WatchBestPath(true))
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	for _, s := range reqs.Shared.Sets {
		if err := bgpS.AddDefinedSet(ctx, s); err != nil {
			return err
		}
	}
	for _, p := range reqs.Shared.Policies {
		if err := bgpS.AddPolicy(ctx, p); err != nil {
			return err
		}
	}
	for _, a := range reqs.Shared.Assignments {
		if err := bgpS.AddPolicyAssignment(ctx, a); err != nil {
			return err
		}
	}
	for _, s := range reqs.Sets {
		if err := bgpS.AddDefinedSet(ctx, s); err != nil {
			return err
		}
	}
	if _, err := bgpS.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{reqs.Path}}); err != nil {
		return fmt.Errorf("add path: %w", err)
	}
	for _, p := range reqs.Peers {
		if err := bgpS.AddPeer(ctx, p); err != nil {
			return fmt.Errorf("add peer %s: %w", p.Peer.Conf.NeighborAddress, err)
		}
	}
	<-ctx.Done()
	return nil
}

// sessions counts the Established sessions; its handler serves the count
// as text.
type sessions struct {
	mu    sync.Mutex
	state map[netip.Addr]bool // Established
	n     atomic.Int64
}

func (s *sessions) update(ev *apiutil.WatchEventMessage_PeerEvent) {
	if ev == nil || ev.Type == apiutil.PEER_EVENT_END_OF_INIT {
		return
	}
	a := ev.Peer.State.NeighborAddress
	if !a.IsValid() {
		a = ev.Peer.Conf.NeighborAddress
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state[a.Unmap()] = ev.Peer.State.SessionState == bgp.BGP_FSM_ESTABLISHED
	n := 0
	for _, up := range s.state {
		if up {
			n++
		}
	}
	s.n.Store(int64(n))
}

func (s *sessions) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, strconv.FormatInt(s.n.Load(), 10)+"\n")
}

// hop is one learned path of a prefix: where it came from (neighbor and
// path ID) and its next hop.
type hop struct {
	from netip.Addr
	id   uint32
	nh   netip.Addr
}

// kernel keeps the learned routes in the main table: each prefix's set
// of best paths (GoBGP's multipath deltas, applied as they come) and what
// is installed, so that a route is replaced only when its next hops
// change (a graceful restart's withdrawal and re-announcement of the same
// path change nothing).
type kernel struct {
	h         *netlink.Handle
	mu        sync.Mutex
	sets      map[netip.Prefix][]hop
	installed map[netip.Prefix][]netip.Addr
}

func (k *kernel) best(paths []*apiutil.Path, log *slog.Logger) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var touched []netip.Prefix
	for _, p := range paths {
		if p == nil || p.Family != bgp.RF_IPv4_UC || !p.PeerAddress.IsValid() || p.PeerAddress.IsUnspecified() {
			continue // another family, or an own path
		}
		n, ok := p.Nlri.(*bgp.IPAddrPrefix)
		if !ok || !n.Prefix.IsValid() {
			continue
		}
		pfx := n.Prefix.Masked()
		if !slices.Contains(touched, pfx) {
			touched = append(touched, pfx)
		}
		h := hop{from: p.PeerAddress.Unmap(), id: p.RemoteID}
		set := slices.DeleteFunc(k.sets[pfx], func(x hop) bool { return x.from == h.from && x.id == h.id })
		if !p.Withdrawal {
			for _, a := range p.Attrs {
				if x, ok := a.(*bgp.PathAttributeNextHop); ok {
					h.nh = x.Value.Unmap()
				}
			}
			if h.nh.IsValid() {
				set = append(set, h)
			}
		}
		if len(set) == 0 {
			delete(k.sets, pfx)
		} else {
			k.sets[pfx] = set
		}
	}
	for _, pfx := range touched {
		var want []netip.Addr
		for _, h := range k.sets[pfx] {
			if !slices.Contains(want, h.nh) {
				want = append(want, h.nh)
			}
		}
		slices.SortFunc(want, netip.Addr.Compare)
		if slices.Equal(want, k.installed[pfx]) {
			continue
		}
		var err error
		if len(want) == 0 {
			del := k.route(pfx, nil)
			del.Type = 0 // any type: the kernel matches the key
			err = k.h.RouteDel(del)
			if errors.Is(err, unix.ESRCH) {
				err = nil
			}
			delete(k.installed, pfx)
		} else if err = k.h.RouteReplace(k.route(pfx, want)); err == nil {
			k.installed[pfx] = want
		}
		if err != nil {
			log.Warn("kernel route failed", "prefix", pfx.String(), "error", err)
		}
	}
}

// route is pfx via the next hops in the main table at the agent's
// protocol and metric; without next hops, a blackhole.
func (k *kernel) route(pfx netip.Prefix, via []netip.Addr) *netlink.Route {
	r := &netlink.Route{Dst: &net.IPNet{IP: pfx.Addr().AsSlice(), Mask: net.CIDRMask(pfx.Bits(), pfx.Addr().BitLen())},
		Family: netlink.FAMILY_V4, Table: unix.RT_TABLE_MAIN, Protocol: Protocol, Priority: Metric, Type: unix.RTN_UNICAST}
	switch len(via) {
	case 0:
		r.Type = unix.RTN_BLACKHOLE
	case 1:
		r.Gw = via[0].AsSlice()
	default:
		for _, a := range via {
			r.MultiPath = append(r.MultiPath, &netlink.NexthopInfo{Gw: a.AsSlice()})
		}
	}
	return r
}
