package e2e

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/effects/gobgp"
	"github.com/peeragent/peeragent/internal/testrig/logbuf"
	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/watch"
)

// --- the agent ----------------------------------------------------------

type clusterAgentConfig struct {
	rest      *rest.Config // nil: admin
	group     string
	namespace string              // the agent's secrets namespace; "" is the default
	realBGP   bool                // the real GoBGP executor (on 127.0.0.1) instead of an acknowledging fake
	learned   bool                // with realBGP: its best-path watch feeds the loop (the learned routes)
	published []func(state.State) // more observers of published States
}

// clusterAgent is the agent as run.go wires it, minus HTTP and VPP: the
// Kubernetes source feeding the real Loop, whose speaker effects go
// through a counting wrapper to the real GoBGP executor or a fake.
type clusterAgent struct {
	t        *testing.T
	e        *clusterEnv
	loop     *agent.Loop
	speaker  *recorder
	watches  *clusterWatches
	reduced  *tally          // the actions the loop reduced, from its journal
	bgp      *gobgp.Executor // nil with the fake
	logs     *logbuf.Buffer
	started  time.Time
	kubeDone chan struct{}
	kubeErr  error
	stopOnce sync.Once
	stopFn   func()
}

func (e *clusterEnv) startAgent(c clusterAgentConfig) *clusterAgent {
	t := e.t
	t.Helper()
	cfg := c.rest
	if cfg == nil {
		cfg = e.kc.RESTConfig()
	}
	_, dyn := kubeClients(t, cfg)
	ns := c.namespace
	if ns == "" {
		ns = state.DefaultNamespace
	}
	a := &clusterAgent{t: t, e: e, logs: &logbuf.Buffer{},
		kubeDone: make(chan struct{}), started: time.Now()}
	log := slog.New(slog.NewTextHandler(a.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	tc, err := watch.NewTypedClient(cfg) // as run.go's newKubeClients
	if err != nil {
		t.Fatal(err)
	}
	group, err := watch.ResolveGroup(tc, c.group)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := watch.NewKube(watch.KubeConfig{Client: tc, Dynamic: dyn, Group: group, Namespace: ns, Node: clusterNode, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	a.speaker = &recorder{}
	if c.realBGP {
		a.bgp = gobgp.New(gobgp.Options{ListenAddresses: []string{clusterAddr}, Logger: log, GoBGPLevel: slog.LevelWarn})
		a.speaker.inner = a.bgp
	}
	a.watches = &clusterWatches{inner: kube, svcs: kube}
	a.loop = agent.NewLoop(agent.LoopConfig{Initial: state.New(clusterNode, state.Options{Namespace: ns}), Speaker: a.speaker,
		Secrets: a.watches, Services: a.watches, Log: log, Journal: clusterJournal,
		Published: c.published})
	a.reduced = newTally(a.loop.Journal())
	ctx, cancel := context.WithCancel(context.Background())
	loopDone, sessDone, learnedDone := make(chan struct{}), make(chan error, 1), make(chan error, 1)
	go func() { a.loop.Run(ctx); close(loopDone) }()
	go func() { a.kubeErr = kube.Run(ctx, a.loop.Dispatch); close(a.kubeDone) }()
	if a.bgp != nil {
		go func() { sessDone <- a.bgp.WatchSessions(ctx, a.loop.Dispatch) }()
	} else {
		close(sessDone)
	}
	if a.bgp != nil && c.learned {
		go func() { learnedDone <- a.bgp.WatchLearned(ctx, a.loop.Dispatch) }()
	} else {
		close(learnedDone)
	}
	a.stopFn = func() {
		cancel()
		<-loopDone
		<-a.kubeDone
		if a.kubeErr != nil {
			t.Errorf("kube source: %v", a.kubeErr)
		}
		if err := <-sessDone; err != nil {
			t.Errorf("WatchSessions: %v", err)
		}
		if err := <-learnedDone; err != nil {
			t.Errorf("WatchLearned: %v", err)
		}
		if a.bgp != nil {
			if err := a.bgp.Close(); err != nil {
				t.Errorf("close the GoBGP executor: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("agent log:\n%s\nspeaker effects:\n%s", a.logs.String(), strings.Join(a.speaker.strings(0), "\n"))
		}
	}
	t.Cleanup(a.stop)
	return a
}

// stop ends the agent (also done by a cleanup).
func (a *clusterAgent) stop() { a.stopOnce.Do(a.stopFn) }

// alive fails the test if the kube source returned while it should run.
func (a *clusterAgent) alive() {
	a.t.Helper()
	select {
	case <-a.kubeDone:
		a.t.Fatalf("the kube source returned: %v", a.kubeErr)
	default:
	}
}

// settle returns once everything dispatched so far has been reduced and
// every effect it caused has been handed to the executor and has returned.
// Two markers in turn: when the second is reduced, the step of the first
// (and of everything before it) is complete, its effects queued.
func (a *clusterAgent) settle() {
	a.t.Helper()
	for range 2 {
		n := a.markers()
		a.loop.Dispatch(state.InputProblemsReported{Source: clusterMarker})
		if !clusterPoll(a.e.ctx, clusterWaitMax, func() bool { return a.markers() > n }) {
			a.t.Fatal("the loop never reduced the settle marker")
		}
	}
	if !clusterPoll(a.e.ctx, clusterWaitMax, func() bool { return a.loop.Pending() == 0 }) {
		a.t.Fatal("the loop's effects never drained")
	}
}

// clusterJournal is the agent's journal size: what the loop reduces
// between two reads of its tally (a.reduced) must fit.
const clusterJournal = 10000

// markers is how many settle markers the loop has reduced.
func (a *clusterAgent) markers() int {
	counts, _ := a.reduced.read(a.t)
	return counts["inputProblemsReported/"+clusterMarker]
}

// actions is how many actions of each name the loop has reduced
// (tally's names), the settle markers left out.
func (a *clusterAgent) actions() map[string]int {
	counts, _ := a.reduced.read(a.t)
	delete(counts, "inputProblemsReported/"+clusterMarker)
	return counts
}
