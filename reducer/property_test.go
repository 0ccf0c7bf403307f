package reducer

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/state/pmap"
)

// The property test of the pure core: for random action sequences, Reduce
// never panics and never modifies its input, no password text reaches the
// state dump or an effect, and the incrementally maintained neighbors equal
// a from-scratch derivation over the same final objects.

// TestPropertyIncrementalEqualsScratch runs seeded random sequences; a
// failure names its seed (rerun it with -run '/seed-N$') and prints the
// sequence shrunk to the actions that still make it fail.
func TestPropertyIncrementalEqualsScratch(t *testing.T) {
	seqs, steps := 300, 60
	switch {
	case *propertySeqs > 0:
		seqs = *propertySeqs
	case testing.Short():
		seqs = 50
	case raceEnabled():
		seqs = 40 // the race detector makes each step ten times slower
	}
	for seed := range uint64(seqs) {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			t.Parallel()
			g := &gen{c: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), results: *propertyResults}
			opts := g.options()
			acts, f := play(opts, func(i int, s state.State) (state.Action, bool) {
				if i >= steps {
					return nil, false
				}
				return g.action(s), true
			}, g.results)
			if f != nil {
				report(t, fmt.Sprintf("seed %d", seed), opts, acts, f, g.results)
			}
		})
	}
}

var (
	propertySeqs    = flag.Int("property-seqs", 0, "random sequences TestPropertyIncrementalEqualsScratch runs (0: 300, fewer with -short or -race)")
	propertyResults = flag.Bool("property-results", false, "mix executor and speaker results into the property test's sequences (as FuzzReduce does)")
)

func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	return ok && slices.ContainsFunc(bi.Settings, func(s debug.BuildSetting) bool { return s.Key == "-race" && s.Value == "true" })
}

// failure is the first broken invariant of a run.
type failure struct {
	step int    // index of the action; the sequence's length for end checks
	kind string // panic, mutation, leak, scratch, order, initial-effects, nondeterminism
	what string
}

// feed returns the action to apply to s (the i-th), or false at the end.
type feed func(i int, s state.State) (state.Action, bool)

// play applies what next yields to the empty State, checking every step,
// and then the final State against FromScratch. With history (results of
// executors were fed), a neighbor that keeps its last applied password is
// not derivable from objects, and the final check is skipped when one does.
func play(opts state.Options, next feed, history bool) ([]state.Action, *failure) {
	return playChecked(opts, next, history, true)
}

// playChecked is play, with the per-step purity and leak checks optional
// (the shrinker skips them when the failure is of another kind).
func playChecked(opts state.Options, next feed, history, perStep bool) ([]state.Action, *failure) {
	s := state.New(localNode, opts)
	before := snapshot(s)
	var acts []state.Action
	for i := 0; ; i++ {
		a, ok := next(i, s)
		if !ok {
			break
		}
		acts = append(acts, a)
		n, effs, err := step(s, a)
		if err != "" {
			return acts, &failure{i, "panic", err}
		}
		if !perStep {
			s = n
			continue
		}
		if after := snapshot(s); after != before {
			return acts, &failure{i, "mutation", "Reduce modified its input State (-before +after):\n" + cmp.Diff(readable(before), readable(after))}
		}
		nsnap := snapshot(n)
		if leak := leaked(dumpOf(nsnap), effs); leak != "" {
			return acts, &failure{i, "leak", leak}
		}
		if bad := checkRetries(n); bad != "" {
			return acts, &failure{i, "retries", bad}
		}
		s, before = n, nsnap
	}
	if f := checkScratch(s, history); f != nil {
		f.step = len(acts)
		return acts, f
	}
	if perStep {
		again := state.New(localNode, opts)
		for _, a := range acts {
			again = Reduce(again, a)
		}
		if d := cmp.Diff(readable(snapshot(s)), readable(snapshot(again))); d != "" {
			return acts, &failure{len(acts), "nondeterminism", "a second run differs (-first +second):\n" + d}
		}
	}
	return acts, nil
}

// step is one Reduce and the Diff of it, with any panic caught.
func step(s state.State, a state.Action) (n state.State, effs []string, err string) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Sprintf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	n = Reduce(s, a)
	for _, e := range effects.Diff(s, n) {
		effs = append(effs, e.String())
	}
	return n, effs, ""
}

func leaked(dump string, effs []string) string {
	for _, pw := range passwordTexts {
		if strings.Contains(dump, pw) {
			return fmt.Sprintf("password text %q appears in the state dump", pw)
		}
		for _, e := range effs {
			if strings.Contains(e, pw) {
				return fmt.Sprintf("password text %q appears in effect %q", pw, e)
			}
		}
	}
	return ""
}

func lines(s string) []string { return strings.Split(s, "\n") }

// dumpOf is the part of a snapshot that is the State's dump.
func dumpOf(snap string) string {
	dump, _, _ := strings.Cut(snap, "\n")
	return dump
}

// readable splits a snapshot into lines, its JSON dump indented.
func readable(snap string) []string {
	dump, rest, _ := strings.Cut(snap, "\n")
	var b bytes.Buffer
	if json.Indent(&b, []byte(strings.TrimSuffix(dump, " <nil>")), "", " ") != nil {
		b.WriteString(dump)
	}
	return append(lines(b.String()), lines(rest)...)
}

func toYAML(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}

// snapshot is the State's dump, followed by what the dump leaves out
// (objects, compiled entries, index, applied configs), so that a
// modification anywhere in the input State shows. The dump is the JSON the
// golden files' YAML is converted from (same content, a tenth of the cost).
func snapshot(s state.State) string {
	var b strings.Builder
	d, err := json.Marshal(s.Dump())
	fmt.Fprintf(&b, "%s %v\n", d, err)
	fmt.Fprintf(&b, "seq: %d\nsynced: %v\noptions: %+v\n", s.Seq, s.Synced, s.Options)
	objs, err := json.Marshal(ObjectsOf(s))
	fmt.Fprintf(&b, "objects: %s %v\n", objs, err)
	in, idx := s.Inputs, s.Index
	rangeText(&b, "peer", in.Peers, func(e *state.PeerEntry) string {
		return fmt.Sprintf("%v %v %d %d %d %v", e.Valid, e.IP, e.Port, e.ASN, e.LocalASN, e.Reach)
	})
	rangeText(&b, "node", in.Nodes, func(e *state.NodeEntry) string {
		return fmt.Sprintf("%v %v %d %q", e.V4, e.V6, e.ASN, e.ClusterID)
	})
	rangeText(&b, "filter", in.Filters, func(e *state.FilterEntry) string {
		return fmt.Sprintf("%q %v %v %v %v", e.Invalid, e.ImportV4, e.ExportV4, e.ImportV6, e.ExportV6)
	})
	rangeText(&b, "input-problems", in.InputProblems, func(p []state.Problem) string { return fmt.Sprint(p) })
	rangeText(&b, "problems", s.Out.Problems, func(p []state.Problem) string { return fmt.Sprint(p) })
	rangeText(&b, "applied", s.Out.Sessions, func(x *state.Session) string { j, _ := json.Marshal(x.Applied); return string(j) })
	rangeText(&b, "cands", idx.Cands, func(c []state.Candidate) string { return fmt.Sprint(c) })
	rangeText(&b, "sources", idx.Sources, func(c []state.Candidate) string { return fmt.Sprint(c) })
	rangeText(&b, "node-by-addr", idx.NodeByAddr, func(n string) string { return n })
	usersText := func(m *pmap.Map[struct{}]) string { return fmt.Sprint(m.Keys()) }
	rangeText(&b, "secret-users", idx.SecretUsers, usersText)
	rangeText(&b, "filter-users", idx.FilterUsers, usersText)
	fmt.Fprintf(&b, "sel-peers: %v\nrev-peers: %v\n", idx.SelPeers.Keys(), idx.RevPeers.Keys())
	rangeText(&b, "affinity", in.Affinities, func(e *state.AffinityEntry) string { return fmt.Sprintf("%v %v", e.Block, e.Own) })
	rangeText(&b, "pool", in.Pools, func(e *state.PoolEntry) string { return fmt.Sprint(e.CIDR) })
	rangeText(&b, "pod", in.Pods, func(e *state.PodEntry) string { return fmt.Sprint(e.Addrs) })
	rangeText(&b, "origins", idx.Origins, func(o *state.Origins) string { return fmt.Sprint(*o) })
	rangeText(&b, "pools-by-cidr", idx.PoolsByCIDR, func(n string) string { return n })
	rangeText(&b, "sets", s.Out.Sets, func(m state.SetMember) string { return fmt.Sprint(m) })
	fmt.Fprintf(&b, "communities: %v\n", idx.Communities)
	rangeText(&b, "service", in.Services, func(e *state.ServiceEntry) string { return fmt.Sprint(e.Gives) })
	rangeText(&b, "slices-by-service", idx.SlicesByService, func(n string) string { return n })
	fmt.Fprintf(&b, "service-ranges: %+v watch: %v\n", idx.ServiceRanges, s.Out.ServiceWatch)
	rangeText(&b, "retries", idx.Retries, func(d state.Due) string { return fmt.Sprint(d) })
	return b.String()
}

func rangeText[V any](b *strings.Builder, label string, m *pmap.Map[V], text func(V) string) {
	m.Range(func(k string, v V) bool {
		fmt.Fprintf(b, "%s %s: %s\n", label, k, text(v))
		return true
	})
}

// derived is what must not depend on history: the neighbors, the
// problems, the secrets watched and the speaker's global config. Problems
// a source reported about its own input are not objects, so left out.
//
// An object whose last valid (or last) version is kept in force has history
// FromScratch cannot know: ObjectsOf gives that version, so the neighbors
// agree, but the problems of such an object (kept) are left out.
func derived(s state.State, kept map[string]bool) string {
	s.Inputs.InputProblems = pmap.New[[]state.Problem]()
	d := s.Dump()
	d.Problems = slices.DeleteFunc(d.Problems, func(p state.Problem) bool { return kept[p.Object] })
	var sets []state.SetMember
	s.Out.Sets.Range(func(_ string, m state.SetMember) bool { sets = append(sets, m); return true })
	var routes []state.TableRoute
	s.Out.Routes.Range(func(_ string, r *state.TableRoute) bool {
		if r.Wanted() || r.NotInstalled != "" {
			routes = append(routes, state.TableRoute{Prefix: r.Prefix, Drop: r.Drop, Via: r.Via, Origin: r.Origin, NotInstalled: r.NotInstalled})
		}
		return true
	})
	return toYAML(struct {
		Routes     []state.TableRoute     `json:"routes"`
		Server     state.Server           `json:"server"`
		Watches    []string               `json:"watches"`
		Neighbors  []*state.Neighbor      `json:"neighbors"`
		Problems   []state.Problem        `json:"problems"`
		Advertised []state.AdvertisedPath `json:"advertised"`
		Sets       []state.SetMember      `json:"sets"`
	}{routes, d.Server, d.Watches, d.Neighbors, d.Problems, d.Advertised, sets})
}

func checkScratch(s state.State, history bool) *failure {
	if history && slices.ContainsFunc(s.AllProblems(), func(p state.Problem) bool {
		return strings.Contains(p.Reason, "keeping the last applied password")
	}) {
		return nil
	}
	objs := ObjectsOf(s)
	scratch := FromScratch(s.Node, s.Options, objs)
	kept := keptObjects(s)
	want := derived(scratch, kept)
	if d := cmp.Diff(lines(want), lines(derived(s, kept))); d != "" {
		return &failure{kind: "scratch", what: "incremental State differs from FromScratch (-scratch +incremental):\n" + d}
	}
	if d := cmp.Diff(lines(want), lines(derived(fromUpserts(s.Node, s.Options, objs), kept))); d != "" {
		return &failure{kind: "order", what: "upserts in reverse order differ from FromScratch (-scratch +upserts):\n" + d}
	}
	if d := initialEffects(scratch); d != "" {
		return &failure{kind: "initial-effects", what: d}
	}
	return nil
}

// keptObjects are the objects with a problem saying a version of them that
// is not the current one stays in force.
func keptObjects(s state.State) map[string]bool {
	kept := map[string]bool{}
	for _, p := range s.AllProblems() {
		if strings.Contains(p.Reason, "keeping its last") {
			kept[p.Object] = true
		}
	}
	return kept
}

// fromUpserts derives the same objects another way: every source synced
// empty, then one upsert per object, kinds and objects in reverse order.
func fromUpserts(node string, opts state.Options, o Objects) state.State {
	s := state.New(node, opts)
	for _, k := range append(slices.Clone(state.SyncedKinds), state.KindSecret) {
		s = Reduce(s, state.SourceSynced{Kind: k})
	}
	var acts []state.Action
	for _, x := range o.Peers {
		acts = append(acts, state.PeerUpserted{Peer: x})
	}
	for _, x := range o.Secrets {
		acts = append(acts, state.SecretUpserted{Secret: x})
	}
	for _, x := range o.Filters {
		acts = append(acts, state.FilterUpserted{Filter: x})
	}
	for _, x := range o.Configs {
		acts = append(acts, state.ConfigUpserted{Config: x})
	}
	for _, x := range o.Nodes {
		acts = append(acts, state.NodeUpserted{Node: x})
	}
	for _, x := range o.Pools {
		acts = append(acts, state.IPPoolUpserted{Pool: x})
	}
	for _, x := range o.Affinities {
		acts = append(acts, state.BlockAffinityUpserted{Affinity: x})
	}
	for _, x := range o.Pods {
		acts = append(acts, state.PodUpserted{Pod: x})
	}
	slices.Reverse(acts)
	// Services and slices last: they are watched only once a range is
	// configured (docs/routes.md §8.4).
	for _, x := range o.EndpointSlices {
		acts = append(acts, state.EndpointSliceUpserted{Slice: x})
	}
	for _, x := range o.Services {
		acts = append(acts, state.ServiceUpserted{Service: x})
	}
	for _, a := range acts {
		s = Reduce(s, a)
	}
	for _, b := range o.Learned {
		s = Reduce(s, state.BestPathsChanged{Gen: s.Routing.SpeakerGen, Prefixes: []state.BestPaths{b}})
	}
	return s
}

// initialEffects checks that starting from nothing (every source synced
// empty) the plan adds exactly the active neighbors, and removes nothing.
func initialEffects(scratch state.State) string {
	empty := state.New(scratch.Node, scratch.Options)
	for _, k := range state.SyncedKinds {
		empty = Reduce(empty, state.SourceSynced{Kind: k})
	}
	added, active, paths, want := []string{}, []string{}, []string{}, []string{}
	for _, e := range effects.Diff(empty, scratch) {
		switch e := e.(type) {
		case effects.AddPeer:
			added = append(added, e.Neighbor.Address.String())
		case effects.AddPath:
			paths = append(paths, e.Path.Prefix.String())
		case effects.StartServer, effects.WatchSecret, effects.WatchServices, effects.SetPolicy, effects.ReplaceRoute, effects.SetAdd:
		default:
			return fmt.Sprintf("initial plan has %q", e)
		}
	}
	scratch.Out.Neighbors.Range(func(_ string, n *state.Neighbor) bool {
		if n.Active() {
			active = append(active, n.Address.String())
		}
		return true
	})
	if d := cmp.Diff(active, added); d != "" {
		return "initial plan's add-peers differ from the active neighbors (-active +added):\n" + d
	}
	if scratch.Server != (state.Server{}) {
		scratch.Out.Advertised.Range(func(_ string, p *state.Path) bool { want = append(want, p.Prefix.String()); return true })
	}
	if d := cmp.Diff(want, paths); d != "" {
		return "initial plan's add-paths differ from the advertised paths (-advertised +added):\n" + d
	}
	return ""
}

// shrink drops runs of actions (halves, quarters, ... single actions),
// greedily, while the sequence still fails the same way, and returns the
// smaller sequence and its failure.
func shrink(opts state.Options, acts []state.Action, kind string, history bool) ([]state.Action, *failure) {
	perStep := kind == "mutation" || kind == "leak" || kind == "nondeterminism"
	replay := func(xs []state.Action) *failure {
		_, f := playChecked(opts, func(i int, _ state.State) (state.Action, bool) {
			if i < len(xs) {
				return xs[i], true
			}
			return nil, false
		}, history, perStep)
		return f
	}
	f := replay(acts)
	for size := max(len(acts)/2, 1); ; size /= 2 {
		for changed := true; changed; {
			changed = false
			for i := len(acts) - size; i >= 0; i-- {
				cand := slices.Delete(slices.Clone(acts), i, i+size)
				if g := replay(cand); g != nil && g.kind == kind {
					acts, f, changed = cand, g, true
					i = min(i, len(acts)-size+1)
				}
			}
		}
		if size == 1 {
			return acts, f
		}
	}
}

// shrunk lets only the first failing sequence of a run be shrunk (the
// others are reported as they are), so a common bug does not make every
// parallel subtest spend its time shrinking.
var shrunk atomic.Bool

func report(t *testing.T, origin string, opts state.Options, acts []state.Action, f *failure, history bool) {
	t.Helper()
	small, sf, how := acts, f, "not shrunk"
	if shrunk.CompareAndSwap(false, true) {
		small, sf = shrink(opts, acts, f.kind, history)
		how = fmt.Sprintf("shrunk to %d", len(small))
	}
	if sf == nil {
		small, sf, how = acts, f, "replay passed" // cannot happen while Reduce is pure
	}
	at := fmt.Sprintf("action %d", sf.step)
	if sf.step == len(small) {
		at = "the end"
	}
	t.Fatalf("%s: %s failure in %d actions, %s (node %s, options %+v):\n%s\nat %s: %s",
		origin, f.kind, len(acts), how, localNode, opts, describe(small), at, sf.what)
}

// describe lists actions in their journal form (which actions.yaml of a
// golden scenario also reads); passwords show as fingerprints.
func describe(acts []state.Action) string {
	var b strings.Builder
	for i, a := range acts {
		j, err := state.EncodeAction(a)
		if err != nil {
			j = []byte(err.Error())
		}
		fmt.Fprintf(&b, "%3d - %s\n", i, j)
	}
	return b.String()
}

// checkRetries: every pending retry (a failed record's RetryAt) is in the
// retry index, no record that has not failed keeps one, and the first
// entry of the index is a pending retry, so State.Deadline is not a stale
// one (docs/design.md "Time").
func checkRetries(s state.State) string {
	var bad []string
	check := func(kind, key string, failed bool, at time.Time) {
		d := state.Due{At: at, Kind: kind, Key: key}
		switch _, indexed := s.Index.Retries.Get(state.DueKey(d)); {
		case !at.IsZero() && !failed:
			bad = append(bad, fmt.Sprintf("%s %s keeps retryAt %v but has not failed", kind, key, at))
		case !at.IsZero() && !indexed:
			bad = append(bad, fmt.Sprintf("%s %s retries at %v, not in the index", kind, key, at))
		}
	}
	s.Out.Sessions.Range(func(k string, x *state.Session) bool {
		check(state.RetryPeer, k, x.Phase == state.PhaseFailed, x.RetryAt)
		return true
	})
	s.Out.Routes.Range(func(k string, e *state.TableRoute) bool {
		check(state.RetryRoute, k, e.Phase == state.RoutePhaseFailed, e.RetryAt)
		return true
	})
	s.Out.PathCalls.Range(func(k string, c *state.PathCall) bool {
		check(state.RetryPath, k, c.Phase == state.RoutePhaseFailed, c.RetryAt)
		return true
	})
	_, failed := s.Out.Problems.Get("server")
	check(state.RetryServer, "", failed, s.ServerRetryAt)
	if d, ok := s.FirstRetry(); ok && !(&tx{s: s}).pendingRetry(d) {
		bad = append(bad, fmt.Sprintf("the first retry %v is stale", d))
	}
	return strings.Join(bad, "; ")
}
