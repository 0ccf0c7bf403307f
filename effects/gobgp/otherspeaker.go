package gobgp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// probeTimeout bounds one connection attempt of otherSpeaker.
const probeTimeout = 500 * time.Millisecond

// otherSpeakerError says another BGP speaker holds the port: calico-node's
// BIRD, or calico-vpp-agent's embedded GoBGP, whose BGP cannot be switched
// off today. Binding it anyway would race that speaker for the port on
// every restart (and calico-vpp-agent exits when it loses), so the start
// fails with this one problem while the other speaker is there. Its type
// lets runServer mark the failure (ServerApplyFailed.OtherSpeaker): the
// agent is then not ready, but healthy, as no restart frees the port.
func otherSpeakerError(port uint16, detail string) error {
	return otherSpeakerErr{fmt.Sprintf("another BGP speaker holds port %d: %s (calico-node's BIRD, or calico-vpp-agent's GoBGP?); "+
		"peeragent does not race it for the port: hand BGP over first (Calico: BGP disabled, see the README; "+
		"Calico/VPP: the externalBgpEnabled feature gate, deploy/calico-vpp); the start is retried", port, detail)}
}

// otherSpeakerErr is a start another BGP speaker prevents.
type otherSpeakerErr struct{ msg string }

func (e otherSpeakerErr) Error() string { return e.msg }

// otherSpeaker looks for a listener on port before this speaker binds it:
// at each listen address, or, listening on all of them, at loopback and the
// router ID. A TCP connection accepted there is another speaker (closed at
// once, before any BGP message: BIRD and GoBGP log an unknown peer and
// nothing else).
func otherSpeaker(ctx context.Context, listen []string, routerID netip.Addr, port uint16) error {
	if port == 0 {
		port = 179 // GoBGP's default
	}
	addrs := listen
	if len(addrs) == 0 {
		addrs = []string{"127.0.0.1", "::1"}
		if routerID.IsValid() && !routerID.IsLoopback() {
			addrs = append(addrs, routerID.String())
		}
	}
	d := net.Dialer{Timeout: probeTimeout}
	for _, a := range addrs {
		host := a
		if ip, err := netip.ParseAddr(a); err == nil && ip.IsUnspecified() {
			host = "127.0.0.1"
			if ip.Is6() {
				host = "::1"
			}
		}
		target := net.JoinHostPort(host, strconv.Itoa(int(port)))
		c, err := d.DialContext(ctx, "tcp", target)
		if err == nil {
			c.Close()
			return otherSpeakerError(port, "a listener answers on "+target)
		}
	}
	return nil
}

// portTaken turns GoBGP's failure to bind the port into errOtherSpeaker.
func portTaken(err error, port uint16) error {
	if kindOf(err) != errInUse {
		return err
	}
	return otherSpeakerError(port, err.Error())
}
