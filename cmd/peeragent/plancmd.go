package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"regexp"
	"sync"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

func planCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &runFlags{}
	fs.StringVar(&f.from, "from", "", "manifest directory to plan from; without it, the cluster (--kubeconfig, $KUBECONFIG, ~/.kube/config, in-cluster)")
	fs.StringVar(&f.node, "node", os.Getenv("NODENAME"), "the node to plan for (default $NODENAME)")
	f.clusterFlags(fs)
	out := fs.String("o", "text", "output format: text or json")
	failOn := fs.Bool("fail-on-problems", false, "exit 1 when the plan has problems (a --node that no Node names is one)")
	timeout := fs.Duration("timeout", 30*time.Second, "with a cluster: how long to wait for its lists and the referenced Secrets")
	learnedFile := fs.String("learned", "", "YAML or JSON list of learned best paths ({prefix, nextHops, neighbor}) to plan the route table with, as if the speaker had them")
	f.opts = optionFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := applyEnv(fs); err != nil {
		return err
	}
	if f.node == "" {
		return fmt.Errorf("--node (or $NODENAME) is required")
	}
	if *out != "text" && *out != "json" {
		return fmt.Errorf("-o %q: want text or json", *out)
	}
	var learned []state.BestPaths
	if *learnedFile != "" {
		var err error
		if learned, err = readLearned(*learnedFile); err != nil {
			return err
		}
	}
	var p Plan
	if f.from != "" {
		p = PlanWithLearned(f.node, f.opts(), dirActions(f.from, f.node, f.opts()), learned)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		defer cancel()
		acts, err := listCluster(ctx, f, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
		if err != nil {
			return err
		}
		p = PlanWithLearned(f.node, f.opts(), acts, learned)
	}
	if *out == "json" {
		if err := p.WriteJSON(stdout); err != nil {
			return err
		}
	} else {
		p.WriteText(stdout)
	}
	if *failOn && len(p.Problems) > 0 {
		return fmt.Errorf("%d problems (--fail-on-problems)", len(p.Problems))
	}
	return nil
}

// listCluster runs the agent's own cluster source until every kind has
// listed and every Secret the resulting State references has been read
// (found or not), and returns the actions it dispatched, in order. The
// plan is then computed from them as a fresh agent would.
func listCluster(ctx context.Context, f *runFlags, log *slog.Logger) ([]state.Action, error) {
	requested, requestedServices := map[string]bool{}, false
	return collectCluster(ctx, f, log, "every kind listed and every referenced Secret read",
		func(src source, acts []state.Action, seen map[string]bool) bool {
			s := reduceAll(state.New(f.node, f.opts()), acts)
			missing := false
			s.Out.Watches.Range(func(name string, _ struct{}) bool {
				if !requested[name] {
					requested[name] = true
					src.Watch(name)
				}
				if !seen[name] {
					missing = true
				}
				return true
			})
			if s.Out.ServiceWatch && !s.AllSynced() { // docs/routes.md §8.4
				if w := serviceWatcher(src); w != nil && !requestedServices {
					requestedServices = true
					w.WatchServices()
				}
				missing = true
			}
			return !missing
		})
}

// collectCluster runs the agent's own cluster source, and once every kind
// has listed, asks enough (given the source, the actions so far and the
// Secrets seen) whether to stop; it returns the actions dispatched, in
// order. what says what was awaited, in the --timeout error.
func collectCluster(ctx context.Context, f *runFlags, log *slog.Logger, what string,
	enough func(src source, acts []state.Action, seen map[string]bool) bool) ([]state.Action, error) {
	src, err := newKube(f, log)
	if err != nil {
		return nil, err
	}
	c := &collector{signal: make(chan struct{}, 1)}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- src.Run(runCtx, c.dispatch) }()
	defer func() { stop(); <-done }()
	for {
		if acts, synced, seen := c.snapshot(); synced && enough(src, acts, seen) {
			return acts, nil
		}
		select {
		case <-c.signal:
		case err := <-done:
			if err == nil {
				err = ctx.Err()
			}
			return nil, fmt.Errorf("cluster source ended before it listed: %v", err)
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster: not %s in time (--timeout): %w", what, ctx.Err())
		}
	}
}

// collector keeps what the cluster source dispatches.
type collector struct {
	mu     sync.Mutex
	acts   []state.Action
	signal chan struct{}
}

func (c *collector) dispatch(a state.Action) {
	c.mu.Lock()
	c.acts = append(c.acts, a)
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// snapshot returns the actions so far, whether every gating kind has
// listed, and the Secrets read so far (found or not).
func (c *collector) snapshot() ([]state.Action, bool, map[string]bool) {
	c.mu.Lock()
	acts := append([]state.Action(nil), c.acts...)
	c.mu.Unlock()
	listed := map[state.Kind]bool{}
	seen := map[string]bool{}
	for _, a := range acts {
		switch a := a.(type) {
		case state.SourceSynced:
			listed[a.Kind] = true
		case state.SecretUpserted:
			seen[a.Secret.Name] = true
		case state.SecretDeleted:
			seen[a.Name] = true
		}
	}
	for _, k := range state.SyncedKinds {
		if !listed[k] {
			return acts, false, seen
		}
	}
	return acts, true, seen
}

var genField = regexp.MustCompile(` gen=[0-9]+`)

// withoutGen drops the generation counters from an effect's String for
// people: they are bookkeeping (docs/design.md, rules of taste 3), and a
// plan's are always those of a fresh agent.
func withoutGen(s string) string { return genField.ReplaceAllString(s, "") }

func reduceAll(s state.State, acts []state.Action) state.State {
	for _, a := range acts {
		s = reducer.Reduce(s, a)
	}
	return s
}

// learnedPath is one entry of a --learned file.
type learnedPath struct {
	Prefix   netip.Prefix `json:"prefix"`
	NextHops []netip.Addr `json:"nextHops"`
	Neighbor netip.Addr   `json:"neighbor"`
}

// readLearned reads a --learned file: paths of one prefix form its
// equal-best set (docs/routes.md §9.4), in the file's order.
func readLearned(path string) ([]state.BestPaths, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--learned: %w", err)
	}
	var in []learnedPath
	if err := yaml.UnmarshalStrict(data, &in); err != nil {
		return nil, fmt.Errorf("--learned %s: %w", path, err)
	}
	var out []state.BestPaths
	idx := map[netip.Prefix]int{}
	for i, x := range in {
		if !x.Prefix.IsValid() || len(x.NextHops) == 0 {
			return nil, fmt.Errorf("--learned %s: entry %d: want a prefix and nextHops", path, i+1)
		}
		p := x.Prefix.Masked()
		j, ok := idx[p]
		if !ok {
			j = len(out)
			idx[p] = j
			out = append(out, state.BestPaths{Prefix: p})
		}
		out[j].Paths = append(out[j].Paths, state.LearnedPath{NextHops: x.NextHops, Neighbor: x.Neighbor})
	}
	return out, nil
}
