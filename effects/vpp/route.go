package vpp

import (
	"fmt"
	"net/netip"
	"strings"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/ip_types"
)

// noInterface is sw_if_index ~0: the path names no interface, so VPP
// resolves the gateway recursively through the FIB, as Calico VPP does
// for its own routes. Zero would mean interface 0 (local0).
const noInterface = ^uint32(0)

// nextHop is a normal path via a next hop, with no interface: VPP
// resolves it recursively (docs/routes.md §9.7 rule 4).
func nextHop(via netip.Addr) fib_types.FibPath {
	proto := fib_types.FIB_API_PATH_NH_PROTO_IP4
	if !via.Is4() {
		proto = fib_types.FIB_API_PATH_NH_PROTO_IP6
	}
	return fib_types.FibPath{
		SwIfIndex: noInterface,
		Weight:    1,
		Type:      fib_types.FIB_API_PATH_TYPE_NORMAL,
		Flags:     fib_types.FIB_API_PATH_FLAG_NONE,
		Proto:     proto,
		Nh:        fib_types.FibPathNh{Address: address(via).Un},
	}
}

// address encodes from netip directly: govpp's NewAddress goes through
// net.IP.To4, which would turn an IPv4-mapped IPv6 address into IPv4.
func address(a netip.Addr) ip_types.Address {
	if a.Is4() {
		return ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(a.As4())}
	}
	return ip_types.Address{Af: ip_types.ADDRESS_IP6, Un: ip_types.AddressUnionIP6(a.As16())}
}

// absent reports whether a delete's retval means "the route was not
// there": the one place VPP's NO_SUCH_ENTRY is recognised. Current VPP
// deletes an absent non-multipath route silently; older ones said so.
func absent(retval int32) bool {
	return api.VPPApiError(retval) == api.NO_SUCH_ENTRY
}

// retvalError is a non-zero retval in a VPP reply. It unwraps to govpp's
// api.VPPApiError, so callers can errors.Is it against govpp's constants.
type retvalError int32

func (e retvalError) Error() string {
	return fmt.Sprintf("VPP retval %d (%s)", int32(e), retvalName(int32(e)))
}

func (e retvalError) Unwrap() error { return api.VPPApiError(e) }

// retvalName is VPP's name for a retval, taken from govpp's table (which
// is unexported and only reachable through VPPApiError's text).
func retvalName(retval int32) string {
	text := strings.TrimPrefix(api.VPPApiError(retval).Error(), "VPPApiError: ")
	name, ok := strings.CutSuffix(text, fmt.Sprintf(" (%d)", retval))
	if !ok {
		return "unknown"
	}
	return name
}
