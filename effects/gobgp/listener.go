package gobgp

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/peeragent/peeragent/state"
)

// gobgpAcceptFailed is what GoBGP v4.8.0 logs (internal/pkg/netutils/
// listener.go, acceptLoop) when accepting a connection fails for another
// reason than the listener being closed, for example EMFILE once the
// process is out of file descriptors. Its accept loop then returns for
// good: the port stays bound, the kernel still completes handshakes, and
// no neighbor can ever connect in again. GoBGP has no other hook for it,
// and this line is immediate and exact, so the executor watches for it
// rather than dialling its own port.
const gobgpAcceptFailed = "Failed to AcceptTCP"

// gobgpLogger is the logger of the speaker started as epoch: GoBGP's
// lines go to the agent's handler through scrubHandler, which also tells
// the executor about refused keys and a dead accept loop of that speaker.
func (e *Executor) gobgpLogger(epoch uint64) *slog.Logger {
	h := newScrubHandler(e.ghandler, e.level, e.secrets)
	h.refused = e.refused
	h.acceptFailed = func(why string) {
		// GoBGP logs on its listener goroutine; the executor's lock may be
		// held by an Execute waiting on this speaker.
		go e.listenerDied(epoch, why)
	}
	return slog.New(h)
}

// listenerDied stops the speaker started as epoch, if it still runs, and
// reports it as a server that failed: a problem on /state and /healthz,
// and the server retry starts a new speaker and configures every neighbor
// on it (docs/semantics.md §7: never stall the other neighbors, and a
// dead listener would stall all of them). Without Report it is only
// logged: stopping a speaker that nobody restarts would end the sessions
// that still work.
func (e *Executor) listenerDied(epoch uint64, why string) {
	msg := "the speaker's listener stopped accepting connections (" + why + "): speaker stopped, to be restarted"
	if e.report == nil {
		e.log.Error("speaker listener stopped accepting connections; no one to restart the speaker", "error", why)
		return
	}
	e.mu.Lock()
	if e.epoch != epoch || e.running == nil {
		e.mu.Unlock()
		return
	}
	srv := *e.running
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.stopServer(ctx, e.graceful); err != nil {
		msg += fmt.Sprintf("; stopping it: %v", err)
	}
	e.mu.Unlock()
	e.log.Error("speaker listener stopped accepting connections; speaker stopped", "error", why)
	e.report(state.ServerApplyFailed{Server: srv, Error: e.secrets.scrub(msg), At: e.now()})
}

// attrText is the text of r's attribute key ("" if absent).
func attrText(r slog.Record, key string) string {
	var v string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
			return false
		}
		return true
	})
	return v
}
