package frr

import (
	"encoding/json"
	"fmt"
	"net/netip"
)

// Route is one prefix of bgpd's table as `show bgp ipv4|ipv6 unicast
// PREFIX json` shows it: no Prefix and no Paths when bgpd has no route to
// it.
type Route struct {
	Prefix string `json:"prefix"`
	Paths  []Path `json:"paths"`
}

// Path is one path of a Route.
type Path struct {
	// Community and LargeCommunity hold the path's communities as FRR
	// writes them ("65000:100", "65000:0:7"); empty when it has none.
	Community struct {
		String string `json:"string"`
	} `json:"community"`
	LargeCommunity struct {
		String string `json:"string"`
	} `json:"largeCommunity"`
	Nexthops []Nexthop `json:"nexthops"`
}

// Nexthop is one next hop of a Path: its address and scope ("global",
// "link-local").
type Nexthop struct {
	IP    string `json:"ip"`
	Scope string `json:"scope"`
}

// Route is prefix in bgpd's IPv4 or IPv6 unicast table (by its family),
// and the JSON it was read from.
func (f *FRR) Route(prefix netip.Prefix) (Route, string, error) {
	family := "ipv4"
	if prefix.Addr().Is6() {
		family = "ipv6"
	}
	out, err := f.Exec(fmt.Sprintf("show bgp %s unicast %s json", family, prefix))
	if err != nil {
		return Route{}, out, err
	}
	var r Route
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return Route{}, out, fmt.Errorf("frrtest: %s: route %s: %w", f, prefix, err)
	}
	return r, out, nil
}
