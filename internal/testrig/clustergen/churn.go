package clustergen

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/peeragent/peeragent/state"
)

// Event is one single-object change and the neighbor it changes.
type Event struct {
	Kind   string // "peer", "secret" or "node"
	Action state.Action
	Addr   netip.Addr
}

// Churn kinds, in the order they take turns.
const (
	// ChurnPeer: a BGPFilter is attached to or detached from a BGPPeer (a
	// SetPolicy or DeletePolicy: applied in place, by a soft reset). On
	// GoBGP v4 every neighbor setting resets the session
	// (docs/gobgp-updates.md), so a policy is the in-place change.
	ChurnPeer   = "peer"
	ChurnSecret = "secret" // a peer's password Secret is rotated (a session reset)
	ChurnNode   = "node"   // a remote node's route-reflector label flips (a neighbor moves)
)

// ChurnKinds are the kinds of change this cluster can make: secrets need
// password peers, node labels the Reflector peer and a remote node.
func (c *Cluster) ChurnKinds() []string {
	kinds := []string{}
	if c.externalPeers() > 0 && len(c.Filters) > 0 {
		kinds = append(kinds, ChurnPeer)
	}
	if len(c.PasswordPeers) > 0 {
		kinds = append(kinds, ChurnSecret)
	}
	if _, ok := c.index["peer/rr-targets"]; ok && len(c.Nodes) > 1 {
		kinds = append(kinds, ChurnNode)
	}
	if len(c.Only) == 0 {
		return kinds
	}
	var only []string
	for _, k := range kinds {
		if slices.Contains(c.Only, k) {
			only = append(only, k)
		}
	}
	return only
}

// Churn is the i-th change of a steady churn, starting from the generated
// cluster: the kinds take turns, and each kind visits its objects round
// robin, so that an object changes again only after all the others have.
// Each visit flips the object (a filter on or off, the label true or
// false, a new password), so every change is a real one when the events
// are applied in order from i = 0.
func (c *Cluster) Churn(i int) Event {
	kinds := c.ChurnKinds()
	if len(kinds) == 0 {
		panic("clustergen: this cluster has nothing to churn")
	}
	j := i / len(kinds)
	switch kinds[i%len(kinds)] {
	case ChurnPeer:
		return c.peerChange(j%c.externalPeers(), j/c.externalPeers())
	case ChurnSecret:
		return c.secretChange(j%len(c.PasswordPeers), j/len(c.PasswordPeers))
	default:
		return c.nodeChange(1+j%(len(c.Nodes)-1), j/(len(c.Nodes)-1))
	}
}

// externalPeers counts the generated peers with a peerIP (not rr-targets).
func (c *Cluster) externalPeers() int {
	if _, ok := c.index["peer/rr-targets"]; ok {
		return len(c.Peers) - 1
	}
	return len(c.Peers)
}

func (c *Cluster) peerChange(idx, pass int) Event {
	p := c.Peers[idx]
	p.Filters = nil
	if (pass%2 == 0) != c.filtered[idx] { // the first visit flips the generated state
		p.Filters = []string{c.Filters[idx%len(c.Filters)].Name}
	}
	return Event{Kind: ChurnPeer, Action: state.PeerUpserted{Peer: p}, Addr: PeerAddr(idx)}
}

func (c *Cluster) secretChange(idx, pass int) Event {
	s := state.Secret{Name: c.Secrets[idx].Name, Data: map[string]state.Password{
		"password": state.NewPassword(fmt.Sprintf("rotated-%d-%d", idx, pass))}}
	return Event{Kind: ChurnSecret, Action: state.SecretUpserted{Secret: s}, Addr: PeerAddr(c.PasswordPeers[idx])}
}

func (c *Cluster) nodeChange(idx, pass int) Event {
	n := c.Nodes[idx]
	n.Labels = maps.Clone(n.Labels)
	n.Labels[ReflectorLabel] = fmt.Sprint(pass%2 == 0)
	return Event{Kind: ChurnNode, Action: state.NodeUpserted{Node: n}, Addr: NodeAddr(idx)}
}

// Apply replaces the object a changed in the cluster's lists, as a full
// relist would deliver it. The lists are copied, never changed in place:
// States built from the earlier lists keep pointing into them.
func (c *Cluster) Apply(a state.Action) {
	switch a := a.(type) {
	case state.PeerUpserted:
		c.Peers = replace(c.Peers, c.position("peer/"+a.Peer.Name), a.Peer)
	case state.SecretUpserted:
		c.Secrets = replace(c.Secrets, c.position("secret/"+a.Secret.Name), a.Secret)
	case state.NodeUpserted:
		c.Nodes = replace(c.Nodes, c.position("node/"+a.Node.Name), a.Node)
	default:
		panic(fmt.Sprintf("clustergen: cannot apply %s", a.ActionName()))
	}
}

// position is where the object kind/name sits in its list.
func (c *Cluster) position(key string) int {
	i, ok := c.index[key]
	if !ok {
		panic("clustergen: no object " + key)
	}
	return i
}

func replace[T any](list []T, i int, v T) []T {
	out := slices.Clone(list)
	out[i] = v
	return out
}
