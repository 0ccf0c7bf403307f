package bird

import (
	"context"
	"fmt"
	"time"

	"github.com/peeragent/peeragent/internal/testrig/daemon"
)

// pollInterval is how often the Wait methods ask BIRD.
const pollInterval = 100 * time.Millisecond

// Protocols is every protocol as `birdc show protocols all` shows it, by
// name (the device protocol "device1" included).
func (b *Bird) Protocols() (map[string]ProtocolState, error) {
	out, err := b.Exec("show", "protocols", "all")
	if err != nil {
		return nil, err
	}
	return ParseProtocols(out)
}

// Protocol is one protocol by name (see Neighbor.ProtocolName).
func (b *Bird) Protocol(name string) (ProtocolState, error) {
	all, err := b.Protocols()
	if err != nil {
		return ProtocolState{}, err
	}
	p, ok := all[name]
	if !ok {
		return ProtocolState{}, fmt.Errorf("birdtest: %s has no protocol %q", b, name)
	}
	return p, nil
}

// WaitEstablished polls until the named BGP session is Established and
// returns its state, or fails when ctx ends (the error carries the last
// state seen, with BIRD's last error) or BIRD exits.
func (b *Bird) WaitEstablished(ctx context.Context, name string) (ProtocolState, error) {
	return b.WaitProtocol(ctx, name, ProtocolState.Established)
}

// WaitProtocol polls the named protocol until ok holds for it, as
// WaitEstablished does for Established.
func (b *Bird) WaitProtocol(ctx context.Context, name string, ok func(ProtocolState) bool) (ProtocolState, error) {
	get := func() (ProtocolState, error) { return b.Protocol(name) }
	p, err := daemon.Poll(ctx, b.proc, pollInterval, get, ok)
	if err != nil {
		return p, fmt.Errorf("birdtest: %s: waiting for %s: %w", b, name, err)
	}
	return p, nil
}
