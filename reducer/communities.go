package reducer

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/peeragent/peeragent/state"
)

// parseCommunity reads "a:b" (a standard community, parts 0-65535) or
// "a:b:c" (a large one, parts 0-4294967295) and returns it normalised
// (docs/routes.md §8.5 rule 2); ok is false for anything else.
func parseCommunity(s string) (string, bool) {
	parts := strings.Split(s, ":")
	bits := 16
	switch len(parts) {
	case 2:
	case 3:
		bits = 32
	default:
		return "", false
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		if p == "" || strings.TrimLeft(p, "0123456789") != "" {
			return "", false
		}
		v, err := strconv.ParseUint(p, 10, bits)
		if err != nil {
			return "", false
		}
		out[i] = strconv.FormatUint(v, 10)
	}
	return strings.Join(out, ":"), true
}

// communityParts are a normalised community's numbers.
func communityParts(s string) []uint64 {
	var out []uint64
	for _, p := range strings.Split(s, ":") {
		v, _ := strconv.ParseUint(p, 10, 32)
		out = append(out, v)
	}
	return out
}

// compileCommunities turns a configuration's prefixAdvertisements into
// rules, resolving names in the same object's communities (docs/routes.md
// §8.5 rule 1). What cannot be read is dropped with a problem (§11.3); the
// valid entries apply.
func compileCommunities(c *state.BGPConfiguration) ([]state.CommunityRule, []state.Problem) {
	var probs []state.Problem
	bad := func(format string, args ...any) {
		probs = append(probs, state.Problem{Object: configObject(c.Name), Reason: fmt.Sprintf(format, args...)})
	}
	names := map[string]string{} // "" for a name whose value was dropped
	for _, cm := range c.Communities {
		v, ok := parseCommunity(cm.Value)
		names[cm.Name] = v
		if !ok {
			bad("community %s: value %q is not a:b or a:b:c within range; dropped", cm.Name, cm.Value)
		}
	}
	if c.PrefixAdvertisements == nil {
		return nil, probs
	}
	var out []state.CommunityRule
	for _, pa := range *c.PrefixAdvertisements {
		p, err := netip.ParsePrefix(pa.CIDR)
		if err != nil {
			bad("prefixAdvertisements cidr %q does not parse; entry dropped", pa.CIDR)
			continue
		}
		r := state.CommunityRule{Prefix: p.Masked()}
		for _, s := range pa.Communities {
			if v, ok := parseCommunity(s); ok {
				r.Values = append(r.Values, v)
			} else if v, ok := names[s]; ok {
				if v != "" {
					r.Values = append(r.Values, v)
				}
			} else if strings.Contains(s, ":") {
				bad("prefixAdvertisements %s: community %q is not a:b or a:b:c within range; dropped", pa.CIDR, s)
			} else {
				bad("prefixAdvertisements %s: community %q names no entry of communities; dropped", pa.CIDR, s)
			}
		}
		out = append(out, r)
	}
	return out, probs
}

// refreshCommunities recomputes the prefixAdvertisements in force: those
// of node.<N> when it sets the field, else the default's (docs/routes.md
// §8.5 rule 1). Every path is derived again when they change.
func (t *tx) refreshCommunities() {
	var rules []state.CommunityRule
	if c, ok := t.s.Inputs.Configs.Get("node." + t.s.Node); ok && c.PrefixAdvertisements != nil {
		rules, _ = compileCommunities(c)
	} else if c, ok := t.s.Inputs.Configs.Get("default"); ok {
		rules, _ = compileCommunities(c)
	}
	if !sameCommunityRules(rules, t.s.Index.Communities) {
		t.s.Index.Communities = rules
		t.allPaths = true
		t.refreshCommSets()
	}
}

// refreshCommSets keeps the shared prefix sets of the export policy's
// community statements (docs/routes.md §8.3 rule 3) equal to the rules in
// force: per community value V, the set CommSet(V) of the rule's family
// holds every CIDR whose entry lists V, lengths cidr..full. A learned route
// inside one of them gets V on export (own paths carry theirs from
// origination, §8.5 rule 4).
func (t *tx) refreshCommSets() {
	want := map[string]state.SetMember{}
	for _, r := range t.s.Index.Communities {
		for _, v := range r.Values {
			m := state.SetMember{Set: state.SetName(state.CommSet(v), r.Prefix), Prefix: r.Prefix,
				Min: uint8(r.Prefix.Bits()), Max: uint8(r.Prefix.Addr().BitLen())}
			want[state.SetKey(m.Set, m.Prefix)] = m
		}
	}
	var gone []state.SetMember
	t.s.Out.Sets.RangeFrom(state.SetComm, func(k string, m state.SetMember) bool {
		if !strings.HasPrefix(k, state.SetComm) {
			return false
		}
		if _, ok := want[k]; !ok {
			gone = append(gone, m)
		}
		return true
	})
	for _, m := range gone {
		t.setMember(m, false)
	}
	for _, m := range want {
		t.setMember(m, true)
	}
}

func sameCommunityRules(a, b []state.CommunityRule) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Prefix != b[i].Prefix || strings.Join(a[i].Values, ",") != strings.Join(b[i].Values, ",") {
			return false
		}
	}
	return true
}
