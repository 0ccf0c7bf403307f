package agent

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/net/netutil"
)

// HTTP listener bounds (docs/semantics.md §7: never stall the neighbors).
// Every listener of the agent (--http-addr and --metrics-addr) holds at
// most its cap of connections at a time, so that no client, local or
// remote, can take the file descriptors the BGP listener and the
// neighbors' sockets need; and a client that holds connections idle cannot
// keep others out: when the cap is reached, the connection idle the
// longest (accepted with no request yet, or kept alive between requests)
// is closed to make room, so the kubelet's /healthz probe and Prometheus'
// scrape are served at once even while thousands of idle connections wait.
const (
	// DefaultMaxConns is the default cap of each listener
	// (--http-max-conns, --metrics-max-conns).
	DefaultMaxConns = 64
	// MinMaxConns is the smallest cap: one connection served while
	// another is being replaced.
	MinMaxConns   = 2
	headerTimeout = 5 * time.Second
	readTimeout   = 10 * time.Second
	writeTimeout  = 30 * time.Second // a large /state on a slow reader
	idleTimeout   = 30 * time.Second
)

// Serve serves h on ln with the bounds above: at most maxConns
// connections open at a time (golang.org/x/net/netutil.LimitListener;
// fewer than MinMaxConns counts as MinMaxConns), the longest-idle one
// closed when a new one takes the last place, and read-header, read, write
// and idle timeouts. It returns the server, to Close.
func Serve(ln net.Listener, h http.Handler, maxConns int) *http.Server {
	srv, lln, _ := server(ln, h, maxConns)
	go srv.Serve(lln)
	return srv
}

// Server is Serve's server and capped listener, not yet serving: for a
// caller that runs srv.Serve(ln) itself (cmd/peeragent's supervisor).
func Server(ln net.Listener, h http.Handler, maxConns int) (*http.Server, net.Listener) {
	srv, lln, _ := server(ln, h, maxConns)
	return srv, lln
}

func server(ln net.Listener, h http.Handler, maxConns int) (*http.Server, net.Listener, *evictor) {
	maxConns = max(maxConns, MinMaxConns)
	ev := &evictor{max: maxConns, conns: map[net.Conn]connEntry{}, now: time.Now}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: headerTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, ConnState: ev.connState}
	return srv, netutil.LimitListener(ln, maxConns), ev
}

// evictor follows a server's open connections through ConnState and
// closes the longest-idle one when a new connection takes the last place
// under the cap, so that the next Accept of the limit listener never
// waits for an idle client. A connection serving a request is never
// closed; one accepted whose request has not arrived yet counts as idle
// (since its accept), as a client holding it idle would.
type evictor struct {
	mu      sync.Mutex
	max     int
	conns   map[net.Conn]connEntry // open, not yet closed by the evictor
	now     func() time.Time
	evicted int // for tests
}

type connEntry struct {
	idle  bool      // new (no request read yet) or kept alive between requests
	since time.Time // when it last became idle
}

// connState is the server's ConnState hook. StateNew is called by the
// server's accept loop, before its next Accept: closing a connection
// there frees the limit listener's place in time for it.
func (e *evictor) connState(c net.Conn, st http.ConnState) {
	e.mu.Lock()
	var victim net.Conn
	switch st {
	case http.StateNew:
		e.conns[c] = connEntry{idle: true, since: e.now()}
		if len(e.conns) >= e.max {
			victim = e.oldestIdle(c)
			if victim != nil {
				delete(e.conns, victim)
				e.evicted++
			}
		}
	case http.StateActive:
		if _, ok := e.conns[c]; ok {
			e.conns[c] = connEntry{}
		}
	case http.StateIdle:
		if _, ok := e.conns[c]; ok {
			e.conns[c] = connEntry{idle: true, since: e.now()}
		}
	case http.StateHijacked, http.StateClosed:
		delete(e.conns, c)
	}
	e.mu.Unlock()
	if victim != nil {
		victim.Close() // the server's goroutine for it sees the error and ends
	}
}

// oldestIdle is the connection idle the longest, other than except (nil:
// every one is serving a request).
func (e *evictor) oldestIdle(except net.Conn) net.Conn {
	var victim net.Conn
	var since time.Time
	for c, x := range e.conns {
		if c == except || !x.idle {
			continue
		}
		if victim == nil || x.since.Before(since) {
			victim, since = c, x.since
		}
	}
	return victim
}
