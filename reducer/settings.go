package reducer

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

var netipZero netip.Addr

// markRR makes a neighbor a route-reflector client when this node reflects
// (has a cluster ID), the neighbor is iBGP, and it is not a reflector of
// the same cluster.
func (t *tx) markRR(n *state.Neighbor, l, remote *state.NodeEntry) {
	if l.ClusterID == "" || n.PeerASN != t.asnOf(l) {
		return
	}
	if remote != nil && remote.ClusterID == l.ClusterID {
		return
	}
	n.RouteReflectorClient, n.RouteReflectorClusterID = true, l.ClusterID
}

// families: unicast of the neighbor's family, then the extra families of
// that family the agent was told to enable.
func (t *tx) families(v6 bool) []string {
	fam, other := "ipv4", "ipv6"
	if v6 {
		fam, other = other, fam
	}
	out := []string{fam + "-unicast"}
	for _, f := range t.s.Options.ExtraFamilies {
		if strings.Contains(f, fam) && !strings.Contains(f, other) && f != fam+"-unicast" {
			out = append(out, f)
		}
	}
	return out
}

// policy builds the neighbor's own policy from its BGPFilters, in the
// user's order, for its family only. A filter that does not exist or was
// never valid holds the neighbor back (a policy without it would accept or
// reject other routes); one that became invalid or was deleted while in
// use keeps its last version applied. Each is a problem on the BGPPeer.
func (t *tx) policy(n *state.Neighbor, p *state.PeerEntry) []state.Problem {
	var probs []state.Problem
	obj := bgpPeerObject(p.Spec.Name)
	hold := func(what, reason string) {
		if n.Waiting == "" {
			n.Waiting = what
		}
		probs = append(probs, state.Problem{Object: obj, Reason: fmt.Sprintf("neighbor %s held back: %s", n.Address, reason)})
	}
	for _, name := range p.Spec.Filters {
		n.Filters = append(n.Filters, name)
		f, ok := t.s.Inputs.Filters.Get(name)
		switch {
		case ok && f.RejectedReason != "":
			probs = append(probs, state.Problem{Object: obj, Reason: fmt.Sprintf("filter %s is invalid (%s); %s", name, f.RejectedReason, keptText)})
		case ok && f.Deleted:
			probs = append(probs, state.Problem{Object: obj, Reason: fmt.Sprintf("filter %s was deleted; keeping its last version applied while this BGPPeer names it", name)})
		}
		switch {
		case !ok:
			hold("filter "+name, fmt.Sprintf("filter %s does not exist", name))
		case f.Invalid != "":
			hold("filter "+name, fmt.Sprintf("filter %s is invalid: %s", name, f.Invalid))
		case n.Address.Is6():
			n.Policy.Import = append(n.Policy.Import, f.ImportV6...)
			n.Policy.Export = append(n.Policy.Export, f.ExportV6...)
		default:
			n.Policy.Import = append(n.Policy.Import, f.ImportV4...)
			n.Policy.Export = append(n.Policy.Export, f.ExportV4...)
		}
	}
	switch {
	case p.Spec.NextHopMode == "Self":
		n.Policy.NextHop = "self"
	case p.Spec.NextHopMode == "Keep":
		n.Policy.NextHop = "keep"
	case p.Spec.NextHopMode == "" && p.Spec.KeepOriginalNextHop && n.PeerASN != n.LocalASN:
		n.Policy.NextHop = "keep"
	}
	return probs
}

// password resolves the neighbor's password, failing closed: a required
// secret that is missing holds back a neighbor never configured, and a
// configured one keeps the password last applied to it.
func (t *tx) password(k string, n *state.Neighbor, ref *state.SecretKeyRef) *state.Problem {
	if ref == nil {
		return nil
	}
	r := *ref
	n.PasswordRef = &r
	what := fmt.Sprintf("secret %s/%s key %s", t.s.Options.Namespace, ref.Name, ref.Key)
	why := ""
	if sec, ok := t.s.Inputs.Secrets.Get(ref.Name); ok {
		if v, ok := sec.Data[ref.Key]; ok {
			if why = unusableKey(v); why == "" {
				n.Password = v
				return nil
			}
		}
	}
	switch {
	case ref.Optional && why == "":
		return nil
	case ref.Optional:
		return &state.Problem{Reason: fmt.Sprintf("neighbor %s: %s %s; no password (the reference is optional)", n.Address, what, why)}
	case why == "":
		why = "is missing"
	}
	if sess, ok := t.s.Out.Sessions.Get(k); ok && sess.Applied != nil {
		n.Password = sess.Applied.Password
		return &state.Problem{Reason: fmt.Sprintf("neighbor %s: %s %s; keeping the last applied password", n.Address, what, why)}
	}
	n.Waiting = what
	if why != "is missing" {
		return &state.Problem{Reason: fmt.Sprintf("neighbor %s waiting for %s: it %s", n.Address, what, why)}
	}
	return &state.Problem{Reason: fmt.Sprintf("neighbor %s waiting for %s", n.Address, what)}
}

// MaxPasswordLen is Linux's TCP_MD5SIG_MAXKEYLEN, Calico's documented limit:
// the kernel refuses a longer key, and GoBGP then only logs it and brings
// the session up without authentication.
const MaxPasswordLen = 80

// unusableKey says why a Secret value cannot be a TCP-MD5 key ("" when it
// can): such a value counts as missing (docs/semantics.md §4), never as "no
// password".
func unusableKey(v state.Password) string {
	switch n := v.Len(); {
	case n == 0:
		return "is empty"
	case n > MaxPasswordLen:
		return fmt.Sprintf("is %d bytes long, more than the %d a TCP-MD5 key may have", n, MaxPasswordLen)
	}
	return ""
}

// updateDeps keeps the secret and filter indexes (and so the set of
// secrets to watch) in step with what the neighbor at k references.
func (t *tx) updateDeps(k string, old, n *state.Neighbor) {
	idx := &t.s.Index
	os, ns := secretOf(old), secretOf(n)
	if os != ns {
		if os != "" {
			idx.SecretUsers = t.unuse(idx.SecretUsers, os, k, true)
		}
		if ns != "" {
			idx.SecretUsers = t.use(idx.SecretUsers, ns, k, true)
		}
	}
	var of, nf []string
	if old != nil {
		of = old.Filters
	}
	if n != nil {
		nf = n.Filters
	}
	for _, f := range of {
		if !contains(nf, f) {
			idx.FilterUsers = t.unuse(idx.FilterUsers, f, k, false)
			t.dropDeletedFilter(f)
		}
	}
	for _, f := range nf {
		if !contains(of, f) {
			idx.FilterUsers = t.use(idx.FilterUsers, f, k, false)
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func secretOf(n *state.Neighbor) string {
	if n == nil || n.PasswordRef == nil {
		return ""
	}
	return n.PasswordRef.Name
}

type users = *pmap.Map[*pmap.Map[struct{}]]

func (t *tx) use(m users, name, k string, watch bool) users {
	set, ok := m.Get(name)
	if !ok {
		set = pmap.New[struct{}]()
		if watch {
			t.s.Out.Watches = t.s.Out.Watches.Set(name, struct{}{})
		}
	}
	return m.Set(name, set.Set(k, struct{}{}))
}

func (t *tx) unuse(m users, name, k string, watch bool) users {
	set, ok := m.Get(name)
	if !ok {
		return m
	}
	set = set.Delete(k)
	if set.Len() > 0 {
		return m.Set(name, set)
	}
	if watch {
		t.s.Out.Watches = t.s.Out.Watches.Delete(name)
	}
	return m.Delete(name)
}

// dropDeletedFilter removes a deleted filter once no neighbor uses it.
func (t *tx) dropDeletedFilter(name string) {
	in := &t.s.Inputs
	if f, ok := in.Filters.Get(name); ok && f.Deleted {
		if _, used := t.s.Index.FilterUsers.Get(name); !used {
			in.Filters = in.Filters.Delete(name)
		}
	}
}
