package gobgp

import (
	"log/slog"
	"net/netip"
	"sync"
)

// gobgpKeyRefused is the message GoBGP v4.8.0 logs (pkg/server/server.go,
// addNeighbor) when the kernel refuses a neighbor's TCP-MD5 key on a
// listening socket: a key over 80 bytes (EINVAL), or the socket's option
// memory full (ENOMEM, net.core.optmem_max). GoBGP carries on and the
// neighbor is configured without the key on that socket, so a peer
// without a password would be accepted: the refusal is only in this log
// line (attributes "Key", the neighbor's address, and "Err").
const gobgpKeyRefused = "failed to set md5"

// keyRefusals collects the neighbors whose key the speaker refused, as
// scrubHandler sees GoBGP's log lines. GoBGP logs the refusal inside the
// AddPeer or UpdatePeer call that set the key (on its own goroutine,
// before the call returns), so the executor reads it right after that
// call, while it still knows the neighbor's generation (docs/semantics.md
// §4: a refused key is a failed neighbor, never an unauthenticated
// session). It has its own lock: GoBGP logs while Execute holds the
// executor's.
type keyRefusals struct {
	mu sync.Mutex
	m  map[netip.Addr]string // the kernel's error, scrubbed
}

func newKeyRefusals() *keyRefusals { return &keyRefusals{m: map[netip.Addr]string{}} }

// observe notes a refusal if r is GoBGP's refusal line; err is the
// scrubbed text of its "Err" attribute.
func (k *keyRefusals) observe(r slog.Record, scrub func(string) string) {
	if r.Message != gobgpKeyRefused {
		return
	}
	var addr netip.Addr
	reason := "refused"
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "Key":
			addr, _ = netip.ParseAddr(a.Value.String())
		case "Err":
			reason = scrub(a.Value.String())
		}
		return true
	})
	if !addr.IsValid() {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[addr.Unmap()] = reason
}

// take returns and forgets the refusal noted for a.
func (k *keyRefusals) take(a netip.Addr) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	r, ok := k.m[a]
	delete(k.m, a)
	return r, ok
}
