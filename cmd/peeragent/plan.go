package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"slices"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/watch"
)

// Plan is `peeragent plan -o json`: a stable interface.
type Plan struct {
	Node      string          `json:"node"`
	RouterID  string          `json:"routerID"`
	ASN       uint32          `json:"asn"`
	Neighbors []PlanNeighbor  `json:"neighbors"`
	Effects   []string        `json:"effects"`
	Problems  []state.Problem `json:"problems"`
	// Advertised are the own paths, sorted by prefix (docs/routes.md §8).
	Advertised []PlanPath `json:"advertised"`
	// Routes is the route table the dataplane would get, sorted by prefix
	// (docs/routes.md §9): the own-block drop routes, the reachableBy
	// routes, and the learned routes of --learned.
	Routes []PlanRoute `json:"routes"`
}

// PlanRoute is one desired route: a drop route or next hops, and where it
// comes from ("blockaffinity/NAME", "learned", or for a reachableBy route
// the neighbor's origin).
type PlanRoute struct {
	Prefix string   `json:"prefix"`
	Drop   bool     `json:"drop"`
	Via    []string `json:"via"`
	Origin string   `json:"origin"`
}

// PlanPath is one own path: its attributes, the objects producing it and
// the neighbors it goes to (docs/routes.md §8.3 rule 11).
type PlanPath struct {
	Prefix      string   `json:"prefix"`
	NextHop     string   `json:"nextHop"`
	Communities []string `json:"communities"`
	Origins     []string `json:"origins"`
	To          []string `json:"to"`
}

// planPath is an own path as the plan shows it (*guard*:
// TestPlanPathCoversEveryPathField).
func planPath(a state.AdvertisedPath) PlanPath {
	pp := PlanPath{Prefix: a.Prefix.String(), NextHop: addrText(a.NextHop),
		Communities: append([]string{}, a.Communities...), Origins: append([]string{}, a.Origins...), To: []string{}}
	for _, to := range a.To {
		pp.To = append(pp.To, to.String())
	}
	return pp
}

// PlanNeighbor is one neighbor of the plan, sorted by address.
type PlanNeighbor struct {
	Address                 string   `json:"address"`
	Port                    uint16   `json:"port"`
	PeerASN                 uint32   `json:"peerASN"`
	LocalASN                uint32   `json:"localASN"`
	Origin                  string   `json:"origin"`
	Passive                 bool     `json:"passive"`
	Password                string   `json:"password"`
	SourceAddress           string   `json:"sourceAddress"`
	TTLMin                  uint8    `json:"ttlMin"`
	EBGPMultihopTTL         uint8    `json:"ebgpMultihopTTL"`
	GracefulRestartSeconds  uint32   `json:"gracefulRestartSeconds"`
	KeepaliveSeconds        uint32   `json:"keepaliveSeconds"`
	AllowOwnASN             uint8    `json:"allowOwnASN"`
	RouteReflectorClient    bool     `json:"routeReflectorClient"`
	RouteReflectorClusterID string   `json:"routeReflectorClusterID"`
	Families                []string `json:"families"`
	Filters                 []string `json:"filters"`
	ReachableBy             string   `json:"reachableBy"`
	MaxPrefixes             uint32   `json:"maxPrefixes"`
}

// MakePlan computes, without applying anything, what a fresh agent on
// node would configure from the manifests in dir.
func MakePlan(dir, node string, opts state.Options) Plan {
	return PlanWithLearned(node, opts, dirActions(dir, node, opts), nil)
}

// dirActions are the actions of a manifest directory's objects.
func dirActions(dir, node string, opts state.Options) []state.Action {
	ns := opts.Namespace
	if ns == "" {
		ns = state.DefaultNamespace
	}
	objs, probs := watch.LoadDirOn(dir, ns, node) // docs/semantics.md §1: the agent's namespace only; this node's Pods only
	var acts []state.Action
	if len(probs) > 0 {
		acts = append(acts, state.InputProblemsReported{Source: "file/" + dir, Problems: probs})
	}
	return append(acts, objs.Actions()...)
}

// PlanFrom computes the plan of a fresh agent on node that has seen acts,
// in order (a manifest directory's objects, or a cluster's first lists).
// A node that no Node names is a problem: the plan is then of nothing.
func PlanFrom(node string, opts state.Options, acts []state.Action) Plan {
	return PlanWithLearned(node, opts, acts, nil)
}

// PlanWithLearned is PlanFrom with learned best paths, as the speaker's
// initial snapshot would give them (docs/routes.md §9.1), for a dry run of
// the route table.
func PlanWithLearned(node string, opts state.Options, acts []state.Action, learned []state.BestPaths) Plan {
	s := state.New(node, opts)
	for _, a := range acts {
		s = reducer.Reduce(s, a)
	}
	if len(learned) > 0 {
		s = reducer.Reduce(s, state.BestPathsChanged{Gen: s.Routing.SpeakerGen, Init: true, Prefixes: learned})
	}
	p := Plan{Node: node, ASN: s.Server.ASN, RouterID: addrText(s.Server.RouterID),
		Neighbors: []PlanNeighbor{}, Effects: []string{}, Problems: s.AllProblems(), Advertised: []PlanPath{}, Routes: []PlanRoute{}}
	if _, ok := s.Inputs.Nodes.Get(node); !ok {
		p.Problems = append(p.Problems, state.Problem{Object: "node/" + node, Reason: "no Node of this name in the input: nothing to plan for"})
	}
	for _, e := range effects.Diff(state.New(node, opts), s) {
		p.Effects = append(p.Effects, e.String())
	}
	s.Out.Neighbors.Range(func(_ string, n *state.Neighbor) bool {
		if n.Active() {
			p.Neighbors = append(p.Neighbors, planNeighbor(n))
		}
		return true
	})
	for _, a := range s.Dump().Advertised { // by PrefixKey: prefix order
		p.Advertised = append(p.Advertised, planPath(a))
	}
	p.Routes = planRoutes(s)
	return p
}

// planRoutes lists the desired routes of the table, sorted by prefix: the
// own-block drop routes, the neighbors' reachableBy routes and the learned
// routes (docs/routes.md §9.2, §9.3, §9.7 rule 3). The table is keyed by
// prefix, so each prefix has one route.
func planRoutes(s state.State) []PlanRoute {
	var es []*state.TableRoute
	s.Out.Routes.Range(func(_ string, r *state.TableRoute) bool {
		if r.Wanted() {
			es = append(es, r)
		}
		return true
	})
	slices.SortFunc(es, func(a, b *state.TableRoute) int {
		if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
			return c
		}
		return a.Prefix.Bits() - b.Prefix.Bits()
	})
	out := []PlanRoute{}
	for _, r := range es {
		pr := PlanRoute{Prefix: r.Prefix.String(), Drop: r.Drop, Via: []string{}, Origin: r.Origin}
		for _, v := range r.Via {
			pr.Via = append(pr.Via, v.String())
		}
		out = append(out, pr)
	}
	return out
}

func planNeighbor(n *state.Neighbor) PlanNeighbor {
	return PlanNeighbor{Address: n.Address.String(), Port: n.Port, PeerASN: n.PeerASN, LocalASN: n.LocalASN,
		Origin: n.Origin, Passive: n.Passive, Password: n.Password.Fingerprint(),
		SourceAddress: addrText(n.SourceAddress), TTLMin: n.TTLMin, EBGPMultihopTTL: n.EBGPMultihopTTL,
		GracefulRestartSeconds: n.GracefulRestartSeconds, KeepaliveSeconds: n.KeepaliveSeconds, AllowOwnASN: n.AllowOwnASN,
		RouteReflectorClient: n.RouteReflectorClient, RouteReflectorClusterID: n.RouteReflectorClusterID,
		Families: append([]string{}, n.Families...), Filters: append([]string{}, n.Filters...),
		ReachableBy: addrText(n.ReachableBy), MaxPrefixes: n.MaxPrefixes}
}

func addrText(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// WriteJSON prints the plan as indented JSON.
func (p Plan) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// WriteText prints the plan for people.
func (p Plan) WriteText(w io.Writer) {
	fmt.Fprintf(w, "node %s: AS %d, router ID %s\n\nneighbors (%d):\n", printable(p.Node), p.ASN, orNone(p.RouterID), len(p.Neighbors))
	for _, n := range p.Neighbors {
		pw := ""
		if n.Password != "" {
			pw = " password=" + n.Password
		}
		fmt.Fprintf(w, "  %-22s AS %-10d port %-5d %-24s passive=%v%s\n", n.Address, n.PeerASN, n.Port, printable(n.Origin), n.Passive, pw)
	}
	fmt.Fprintf(w, "\neffects (%d):\n", len(p.Effects))
	for _, e := range p.Effects {
		fmt.Fprintf(w, "  %s\n", printable(withoutGen(e)))
	}
	writeProblems(w, p.Problems)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
