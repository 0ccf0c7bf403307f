package linux

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/loglimit"
	"github.com/peeragent/peeragent/state"
)

// Defaults of the ownership key (docs/routes.md §9.7, decision C6): a
// protocol number no other routing daemon uses, and Calico's metric.
const (
	DefaultProtocol = 201
	DefaultMetric   = 1024
)

// Options are the ownership key; zero fields take the defaults.
type Options struct {
	Protocol int
	Metric   int
	Logger   *slog.Logger
}

// Executor applies the route table to the kernel through one rtnetlink
// handle. Build it with New. Safe for concurrent use (the netlink handle
// serialises its requests).
type Executor struct {
	h        *netlink.Handle
	own      bool // h is New's, Close closes it
	protocol netlink.RouteProtocol
	metric   int
	log      *slog.Logger

	mu sync.Mutex
	// owned are the prefixes whose route at our key (main table, our
	// metric) is ours: listed by ListOwn, or installed by this executor.
	// A replace of one is a single call; any other prefix is first added
	// exclusively, and only when the kernel says the key is taken does the
	// executor look whose route it is (a dump of the prefix's family: the
	// netlink library filters a dump in user space, so checking every
	// replace that way cost O(routes) each, 45 s for 10,000 routes).
	owned map[ownKey]struct{}
	// refused is why the kernel refuses this agent's route changes as a
	// whole (EPERM, EACCES: no CAP_NET_ADMIN in this network namespace),
	// "" once a change succeeds; reported is what Execute last reported.
	refused, reported string
}

// ownKey is a masked prefix as a small map key (netip.Prefix carries a
// zone handle no route has): the executor keeps one per route it owns.
type ownKey struct {
	addr [16]byte
	bits uint8
	v4   bool
}

func ownKeyOf(p netip.Prefix) ownKey {
	p = p.Masked()
	return ownKey{addr: p.Addr().As16(), bits: uint8(p.Bits()), v4: p.Addr().Is4()}
}

var (
	_ effects.Dataplane = (*Executor)(nil)
	_ effects.Executor  = (*Executor)(nil)
)

// New returns an Executor over h, which the caller keeps owning; a nil h
// is a handle New makes in the caller's network namespace (that of the
// calling thread): one rtnetlink socket that every call uses, each with
// netlink's socket timeout (60 s) on its send and its answer. A call that
// times out or fails leaves the socket usable: each request has its own
// sequence number, and an answer of another (one that came after its
// request timed out) is skipped (netlink v1.3.1 nl/nl_linux.go
// ExecuteIter). Should the socket not be made, the calls open one each
// (netlink's package functions), as before.
func New(h *netlink.Handle, o Options) *Executor {
	own := false
	if h == nil {
		h, own = keptHandle()
	}
	if o.Protocol == 0 {
		o.Protocol = DefaultProtocol
	}
	if o.Metric == 0 {
		o.Metric = DefaultMetric
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	// A failure repeated for every route (a next hop not on-link for
	// 20,000 of them) is a few lines a minute, not two per route per retry
	// (docs/routes.md §9.7 rule 3).
	log := slog.New(loglimit.New(o.Logger.Handler(), loglimit.Options{}))
	return &Executor{h: h, own: own, protocol: netlink.RouteProtocol(o.Protocol), metric: o.Metric, log: log,
		owned: map[ownKey]struct{}{}}
}

// keptHandle is a handle of one rtnetlink socket in the calling thread's
// namespace, with netlink's socket timeout, and true; else the handle of
// netlink's package functions (a socket per call) and false.
func keptHandle() (*netlink.Handle, bool) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err == nil {
		if err = h.SetSocketTimeout(netlink.GetSocketTimeout()); err == nil {
			return h, true
		}
		h.Close()
	}
	return &netlink.Handle{}, false
}

// Close releases the handle New made (not one the caller passed).
func (e *Executor) Close() {
	if e.own {
		e.h.Close()
	}
}

// Name is the --dataplane value.
func (e *Executor) Name() string { return "linux" }

// Execute applies the route table effects of effs. When the kernel starts
// or stops refusing route changes as a whole (permission denied), it adds
// the problem of the "linux" source (state.DataplaneSources), or its
// clearing: the agent is not ready meanwhile (docs/routes.md §9.7 rule 7).
func (e *Executor) Execute(ctx context.Context, effs []effects.Effect) []state.Action {
	out := effects.ApplyRoutes(ctx, e, effs)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.refused == e.reported {
		return out
	}
	e.reported = e.refused
	report := state.InputProblemsReported{Source: problemSource}
	if e.refused != "" {
		report.Problems = []state.Problem{{Object: "linux", Reason: e.refused}}
	}
	return append(out, report)
}

// problemSource is the source of the kernel's refusal in the State.
const problemSource = "linux"

// noteResult records whether err says the kernel refuses this agent's
// route changes as a whole, or (nil) that one was accepted.
func (e *Executor) noteResult(err error) {
	why := ""
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		why = fmt.Sprintf("the kernel refuses this agent's route changes (%v): it needs CAP_NET_ADMIN in the host's network namespace", err)
	} else if err != nil {
		return // one route's own failure says nothing about the others
	}
	e.mu.Lock()
	e.refused = why
	e.mu.Unlock()
}

// Replace installs r (normal: see state.NormalRoute) as the owned route of
// its prefix, unless another protocol holds that key.
func (e *Executor) Replace(ctx context.Context, r state.Route) error {
	return e.result(ctx, e.replace(ctx, r), call{verb: "replace", done: "replaced", key: "route"}, r)
}

// call names a route call in its error and logs: its verb, its past
// tense and the log key of what it is called with.
type call struct{ verb, done, key string }

// result notes a route call's error (noteResult), wraps and logs it as a
// warning, or logs the success at debug level.
func (e *Executor) result(ctx context.Context, err error, c call, of fmt.Stringer) error {
	e.noteResult(err)
	if err != nil {
		err = fmt.Errorf("%s route %s: %w", c.verb, of, err)
		e.log.Warn("kernel route failed", "error", err)
		return err
	}
	if e.log.Enabled(ctx, slog.LevelDebug) { // String is not free: skip it unless logged
		e.log.Debug("kernel route "+c.done, c.key, of.String())
	}
	return nil
}

func (e *Executor) replace(ctx context.Context, r state.Route) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	nr, err := e.kernelRoute(r)
	if err != nil {
		return err
	}
	if e.isOwned(r.Prefix) {
		return e.h.RouteReplace(nr)
	}
	err = e.h.RouteAdd(nr) // NLM_F_EXCL: fails if the key is taken
	if errors.Is(err, unix.EEXIST) {
		if p, ferr := e.foreign(nr); ferr != nil {
			return ferr
		} else if p != 0 {
			return fmt.Errorf("the kernel's route for %s with metric %d belongs to protocol %s, not ours (%s): left alone",
				r.Prefix, e.metric, p, e.protocol)
		}
		err = e.h.RouteReplace(nr) // ours, from before this executor knew
	}
	if err == nil {
		e.setOwned(r.Prefix, true)
	}
	return err
}

func (e *Executor) isOwned(p netip.Prefix) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, own := e.owned[ownKeyOf(p)]
	return own
}

func (e *Executor) setOwned(p netip.Prefix, own bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if own {
		e.owned[ownKeyOf(p)] = struct{}{}
	} else {
		delete(e.owned, ownKeyOf(p))
	}
}

// Delete removes the owned route of p; the kernel matches protocol,
// table and metric, so a route of another protocol is never removed.
func (e *Executor) Delete(ctx context.Context, p netip.Prefix) error {
	err := ctx.Err()
	if err == nil {
		err = e.h.RouteDel(e.key(p))
	}
	if absent(err) {
		err = nil
	}
	if err == nil {
		e.setOwned(p, false)
	}
	return e.result(ctx, err, call{verb: "delete", done: "deleted", key: "prefix"}, p)
}

// ListOwn dumps the main table's routes of our protocol and metric, both
// families.
func (e *Executor) ListOwn(ctx context.Context) ([]state.Route, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	filter := &netlink.Route{Table: unix.RT_TABLE_MAIN, Protocol: e.protocol}
	krs, err := e.list(netlink.FAMILY_ALL, filter, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return nil, fmt.Errorf("list routes of protocol %s: %w", e.protocol, err)
	}
	var out []state.Route
	owned := map[ownKey]struct{}{}
	for _, kr := range krs {
		if kr.Priority != e.metric {
			continue
		}
		r, ok := fromKernel(kr)
		if !ok {
			e.log.Warn("own kernel route of an unknown form left out of the list", "route", kr.String())
			continue
		}
		owned[ownKeyOf(r.Prefix)] = struct{}{}
		out = append(out, r)
	}
	// The listing is what the kernel has: a route someone else removed or
	// took over under its own protocol is no longer owned, so the next
	// Replace adds exclusively and never overwrites another protocol's
	// route (docs/routes.md §9.7 rules 2 and 6).
	e.mu.Lock()
	e.owned = owned
	e.mu.Unlock()
	return out, nil
}

// list is RouteListFiltered, retried when the kernel interrupted the dump
// (the table changed meanwhile), so a partial table is never reported.
func (e *Executor) list(family int, filter *netlink.Route, mask uint64) ([]netlink.Route, error) {
	for range 3 {
		krs, err := e.h.RouteListFiltered(family, filter, mask)
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return krs, err
		}
	}
	return nil, netlink.ErrDumpInterrupted
}

// foreign returns the protocol of a main-table route with nr's prefix and
// metric that is not ours, or zero.
func (e *Executor) foreign(nr *netlink.Route) (netlink.RouteProtocol, error) {
	filter := &netlink.Route{Table: unix.RT_TABLE_MAIN, Dst: nr.Dst}
	krs, err := e.list(nr.Family, filter, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_DST)
	if err != nil {
		return 0, fmt.Errorf("look for other routes: %w", err)
	}
	for _, kr := range krs {
		if kr.Priority == e.metric && kr.Protocol != e.protocol {
			return kr.Protocol, nil
		}
	}
	return 0, nil
}

// key is the ownership key of p: what Delete matches and Replace sets.
func (e *Executor) key(p netip.Prefix) *netlink.Route {
	family := netlink.FAMILY_V4
	if !p.Addr().Is4() {
		family = netlink.FAMILY_V6
	}
	return &netlink.Route{
		Dst:      &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())},
		Family:   family,
		Table:    unix.RT_TABLE_MAIN,
		Protocol: e.protocol,
		Priority: e.metric,
	}
}

// kernelRoute is r as rtnetlink attributes.
func (e *Executor) kernelRoute(r state.Route) (*netlink.Route, error) {
	if !r.Prefix.IsValid() {
		return nil, errors.New("invalid prefix")
	}
	nr := e.key(r.Prefix)
	switch {
	case r.Drop:
		nr.Type = unix.RTN_BLACKHOLE
		return nr, nil
	case len(r.Via) == 0:
		return nil, errors.New("neither drop nor a next hop")
	}
	for _, a := range r.Via {
		if a.Is4() != r.Prefix.Addr().Is4() {
			return nil, fmt.Errorf("next hop %s is not in the prefix's address family", a)
		}
	}
	nr.Type = unix.RTN_UNICAST
	if len(r.Via) == 1 {
		nr.Gw = r.Via[0].AsSlice()
		return nr, nil
	}
	for _, a := range r.Via {
		nr.MultiPath = append(nr.MultiPath, &netlink.NexthopInfo{Gw: a.AsSlice()})
	}
	return nr, nil
}

// fromKernel reads a listed route back; ok is false for a form this
// agent never installs (unreachable, prohibit, a route without gateway).
func fromKernel(kr netlink.Route) (state.Route, bool) {
	r := state.Route{Prefix: dst(kr)}
	if !r.Prefix.IsValid() {
		return state.Route{}, false
	}
	switch {
	case kr.Type == unix.RTN_BLACKHOLE:
		r.Drop = true
	case kr.Type != unix.RTN_UNICAST:
		return state.Route{}, false
	case kr.Gw != nil:
		r.Via = append(r.Via, ipAddr(kr.Gw))
	default:
		for _, nh := range kr.MultiPath {
			if nh.Gw != nil {
				r.Via = append(r.Via, ipAddr(nh.Gw))
			}
		}
		if len(r.Via) == 0 {
			return state.Route{}, false
		}
	}
	return state.NormalRoute(r), true
}

// dst is the route's prefix; netlink leaves Dst nil for a default route.
func dst(kr netlink.Route) netip.Prefix {
	if kr.Dst == nil {
		switch kr.Family {
		case netlink.FAMILY_V4:
			return netip.PrefixFrom(netip.IPv4Unspecified(), 0)
		case netlink.FAMILY_V6:
			return netip.PrefixFrom(netip.IPv6Unspecified(), 0)
		}
		return netip.Prefix{}
	}
	addr, ok := netip.AddrFromSlice(kr.Dst.IP)
	if !ok {
		return netip.Prefix{}
	}
	if kr.Dst.IP.To4() != nil {
		addr = addr.Unmap()
	}
	bits, _ := kr.Dst.Mask.Size()
	return netip.PrefixFrom(addr, bits)
}

func ipAddr(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}

// absent reports whether a delete's error means "no such route": the one
// place the kernel's ESRCH is recognised.
func absent(err error) bool {
	return errors.Is(err, syscall.ESRCH)
}
