package reducer

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/peeragent/peeragent/state"
)

// compileFilter turns a BGPFilter into rules per direction and family. One
// bad rule invalidates the whole filter: applying part of an ordered,
// first-match list would change what the rest means.
func compileFilter(f *state.BGPFilter) *state.FilterEntry {
	e := &state.FilterEntry{Spec: f}
	if len(f.Unsupported) > 0 {
		e.Invalid = fmt.Sprintf("unsupported field %s: this agent cannot apply it", strings.Join(f.Unsupported, ", "))
		return e
	}
	lists := []struct {
		name string
		in   []state.FilterRule
		v6   bool
		out  *[]state.Rule
	}{
		{"exportV4", f.ExportV4, false, &e.ExportV4}, {"importV4", f.ImportV4, false, &e.ImportV4},
		{"exportV6", f.ExportV6, true, &e.ExportV6}, {"importV6", f.ImportV6, true, &e.ImportV6},
	}
	for _, l := range lists {
		for i, r := range l.in {
			rule, err := compileRule(f.Name, r, l.v6)
			if err != nil {
				e.Invalid = fmt.Sprintf("%s rule %d: %v", l.name, i+1, err)
				e.ImportV4, e.ExportV4, e.ImportV6, e.ExportV6 = nil, nil, nil, nil
				return e
			}
			*l.out = append(*l.out, rule)
		}
	}
	return e
}

func compileRule(filter string, r state.FilterRule, v6 bool) (state.Rule, error) {
	out := state.Rule{Filter: filter, Operator: r.MatchOperator}
	switch r.Action {
	case "Accept":
		out.Action = "accept"
	case "Reject":
		out.Action = "reject"
	default:
		return out, fmt.Errorf("action %q is not Accept or Reject", r.Action)
	}
	if r.Interface != "" {
		return out, fmt.Errorf("interface %q cannot be expressed in GoBGP", r.Interface)
	}
	switch r.Source {
	case "":
	case "RemotePeers":
		out.FromRemotePeers = true
	default:
		return out, fmt.Errorf("source %q is not RemotePeers", r.Source)
	}
	if err := compileMatch(&out, r, v6); err != nil {
		return out, err
	}
	return out, nil
}

func compileMatch(out *state.Rule, r state.FilterRule, v6 bool) error {
	if r.CIDR == "" {
		if r.MatchOperator != "" || r.PrefixLength != nil {
			return fmt.Errorf("matchOperator and prefixLength need a cidr")
		}
		return nil
	}
	p, err := netip.ParsePrefix(r.CIDR)
	if err != nil {
		return fmt.Errorf("cidr %q does not parse", r.CIDR)
	}
	if p.Addr().Is4() == v6 {
		return fmt.Errorf("cidr %q is in the wrong address family", r.CIDR)
	}
	out.Prefix = p.Masked()
	switch r.MatchOperator {
	case "Equal", "NotEqual", "In", "NotIn":
	default:
		return fmt.Errorf("matchOperator %q is not Equal, NotEqual, In or NotIn", r.MatchOperator)
	}
	if pl := r.PrefixLength; pl != nil {
		// As Calico: an unset min is the CIDR's length (and a smaller one is
		// raised to it), an unset max is the family's full length.
		bits := int32(p.Addr().BitLen())
		lo, hi := max(int32(p.Bits()), pl.Min), bits
		if pl.Max != 0 {
			hi = pl.Max
		}
		if pl.Min < 0 || pl.Max < 0 || pl.Min > bits || pl.Max > bits || lo > hi {
			return fmt.Errorf("prefixLength %d-%d is out of range for %s", pl.Min, pl.Max, r.CIDR)
		}
		out.MinLen, out.MaxLen = uint8(lo), uint8(hi)
	}
	return nil
}
