package frr

import (
	"fmt"
	"net/netip"
	"slices"
)

// commands are the configuration commands, run inside "router bgp AS",
// that turn the running config old into new: only what differs, so an
// unchanged neighbor is not touched and keeps its session. Address, Port
// and AS cannot change (they are bgpd flags and the router's key), nor
// Namespace and Zebra (how the daemons run).
func commands(old, new Config) ([]string, error) {
	if old.Address != new.Address || old.Port != new.Port || old.AS != new.AS {
		return nil, fmt.Errorf("frrtest: Reconfigure cannot change Address, Port or AS (%v:%d AS %d to %v:%d AS %d): Start another FRR",
			old.Address, old.Port, old.AS, new.Address, new.Port, new.AS)
	}
	if old.Namespace != new.Namespace || old.Zebra != new.Zebra {
		return nil, fmt.Errorf("frrtest: Reconfigure cannot change Namespace or Zebra: Start another FRR")
	}
	if !slices.Equal(old.Raw, new.Raw) || !sameAFExtra(old.Neighbors, new.Neighbors) ||
		!slices.Equal(v6Only(old.Announce), v6Only(new.Announce)) {
		return nil, fmt.Errorf("frrtest: Reconfigure cannot change Raw, a neighbor's AFExtra or IPv6 Announce: Start another FRR")
	}
	var cmds []string
	if old.routerID() != new.routerID() {
		cmds = append(cmds, "bgp router-id "+new.routerID().String())
	}
	before := map[netip.Addr]Neighbor{}
	for _, n := range old.Neighbors {
		before[n.Address] = n
	}
	after := map[netip.Addr]bool{}
	for _, n := range new.Neighbors {
		after[n.Address] = true
	}
	for _, n := range old.Neighbors {
		if !after[n.Address] {
			cmds = append(cmds, fmt.Sprintf("no neighbor %s", n.Address))
		}
	}
	for _, n := range new.Neighbors {
		prev, ok := before[n.Address]
		var was []setting
		if ok {
			was = old.settings(prev)
		}
		cmds = append(cmds, settingCommands(n.Address, was, new.settings(n))...)
	}
	return append(cmds, announceCommands(v4Only(old.Announce), v4Only(new.Announce))...), nil
}

// sameAFExtra: every neighbor in both has the same AFExtra; a new one
// has none.
func sameAFExtra(old, new []Neighbor) bool {
	before := map[netip.Addr][]string{}
	for _, n := range old {
		before[n.Address] = n.AFExtra
	}
	for _, n := range new {
		if !slices.Equal(before[n.Address], n.AFExtra) {
			return false
		}
	}
	return true
}

func v4Only(ps []netip.Prefix) []netip.Prefix {
	return slices.DeleteFunc(slices.Clone(ps), func(p netip.Prefix) bool { return !p.Addr().Is4() })
}

func v6Only(ps []netip.Prefix) []netip.Prefix {
	return slices.DeleteFunc(slices.Clone(ps), func(p netip.Prefix) bool { return p.Addr().Is4() })
}

// settingCommands removes the settings whose key is gone, then sets those
// that are new or have a new value. Removals come first: a removed extra
// "timers 1 3" and an added "timers 2 6" share FRR's setting, and "no
// neighbor A timers 1 3" after the new one would undo it.
func settingCommands(addr netip.Addr, was, now []setting) []string {
	var cmds []string
	for _, s := range was {
		if !slices.ContainsFunc(now, func(n setting) bool { return n.key == s.key }) {
			cmds = append(cmds, "no "+s.line(addr))
		}
	}
	for _, s := range now {
		if !slices.Contains(was, s) {
			cmds = append(cmds, s.line(addr))
		}
	}
	return cmds
}

func announceCommands(was, now []netip.Prefix) []string {
	var cmds []string
	for _, p := range was {
		if !slices.Contains(now, p) {
			cmds = append(cmds, "no network "+p.Masked().String())
		}
	}
	for _, p := range now {
		if !slices.Contains(was, p) {
			cmds = append(cmds, "network "+p.Masked().String())
		}
	}
	if len(cmds) == 0 {
		return nil
	}
	cmds = append([]string{"address-family ipv4 unicast"}, cmds...)
	return append(cmds, "exit-address-family")
}
