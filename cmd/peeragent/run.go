package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/peeragent/peeragent/internal/gcstart"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/effects/gobgp"
	"github.com/peeragent/peeragent/effects/linux"
	"github.com/peeragent/peeragent/effects/vpp"
	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/watch"
	"github.com/peeragent/peeragent/watch/status"
)

// source feeds the loop and serves the secret watches.
type source interface {
	agent.SecretWatcher
	Run(ctx context.Context, dispatch func(state.Action)) error
}

// serviceWatcher is src's Service and EndpointSlice watch, if it has one
// (a manifest directory has none: it sends its Services and EndpointSlices
// again whenever the configurations change, watch/files_dir.go).
func serviceWatcher(src source) agent.ServiceWatcher {
	if w, ok := src.(agent.ServiceWatcher); ok {
		return w
	}
	return nil
}

type runFlags struct {
	node, from, kubeconfig, group, httpAddr, vppSocket, logLevel, shutdown string
	listen                                                                 stringList
	dataplane                                                              string
	journal                                                                int
	gcStartPercent                                                         int
	rescan                                                                 time.Duration
	kernelProtocol, kernelMetric                                           int
	opts                                                                   func() state.Options
	operFlags
}

func parseRunFlags(args []string, stderr io.Writer) (*runFlags, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &runFlags{}
	fs.StringVar(&f.node, "node", os.Getenv("NODENAME"), "this node's name (default $NODENAME)")
	fs.StringVar(&f.from, "from", "", "read objects from this manifest directory (live-reloaded) instead of the cluster")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster config)")
	fs.StringVar(&f.group, "calico-api-group", "crd.projectcalico.org/v1", "API group of the Calico objects: crd.projectcalico.org/v1, projectcalico.org/v3 or auto")
	fs.StringVar(&f.httpAddr, "http-addr", "127.0.0.1:9179", "address of the loopback HTTP endpoints (/state, /actions, /healthz, /readyz, /metrics, /neighbors/ADDRESS, /fsm)")
	fs.StringVar(&f.vppSocket, "vpp-socket", "", "VPP binary-API socket; empty: no VPP, routes are recorded as skipped")
	fs.StringVar(&f.dataplane, "dataplane", "", "where routes are installed: vpp, linux (kernel main table, protocol 201, metric 1024) or none (recorded as skipped); default vpp with --vpp-socket, else none")
	fs.IntVar(&f.kernelProtocol, "kernel-route-protocol", linux.DefaultProtocol, "with --dataplane linux: the routing protocol number that marks this agent's kernel routes (not BIRD's 12, FRR's 186-197, Felix's 80)")
	fs.IntVar(&f.kernelMetric, "kernel-route-metric", linux.DefaultMetric, "with --dataplane linux: the metric of this agent's kernel routes")
	fs.DurationVar(&f.rescan, "route-rescan", 30*time.Second, "how often the dataplane's own routes are listed again and compared with the route table, to put back what someone else removed, changed or added under this agent's protocol or FIB source; 0: never")
	fs.Var(&f.listen, "bgp-listen-address", "address the BGP speaker listens on (repeatable; default all addresses)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.IntVar(&f.journal, "journal-size", 1000, "number of recent actions kept for /actions")
	fs.IntVar(&f.gcStartPercent, "gc-start-percent", gcstart.DefaultPercent, "the least GOGC while the agent starts (the heap may always grow 64 MiB past what the last collection kept), until it is ready and its State has not changed for 10 s (at most 2 min); then $GOGC's (default 100) and the freed memory is returned to the OS; 0: Go's GOGC throughout; ignored when $GOGC is set")
	fs.StringVar(&f.shutdown, "shutdown", "graceful", "on SIGTERM: graceful stops the speaker without a NOTIFICATION to graceful-restart peers, which keep this node's routes while it restarts; hard ends every session")
	f.opts = optionFlags(fs)
	registerOperFlags(fs, &f.operFlags)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := applyEnv(fs); err != nil {
		return nil, err
	}
	if f.node == "" {
		return nil, fmt.Errorf("--node (or $NODENAME) is required")
	}
	if !slices.Contains([]string{"", "vpp", "linux", "none"}, f.dataplane) {
		return nil, fmt.Errorf("--dataplane %q: want vpp, linux or none", f.dataplane)
	}
	if f.kernelProtocol < 1 || f.kernelProtocol > 255 || f.kernelProtocol == 12 || f.kernelProtocol == 80 ||
		(f.kernelProtocol >= 186 && f.kernelProtocol <= 197) || f.kernelProtocol <= 4 {
		return nil, fmt.Errorf("--kernel-route-protocol %d: want 5 to 255, not a protocol another daemon uses (BIRD 12, Felix 80, FRR 186-197)", f.kernelProtocol)
	}
	if f.kernelMetric < 1 {
		return nil, fmt.Errorf("--kernel-route-metric %d: want 1 or more", f.kernelMetric)
	}
	if f.rescan < 0 {
		return nil, fmt.Errorf("--route-rescan %s: want a positive duration, or 0 for never", f.rescan)
	}
	if f.neighborSeries < 0 {
		return nil, fmt.Errorf("--metrics-neighbor-series %d: want 0 or more", f.neighborSeries)
	}
	if err := gcstart.CheckPercent(f.gcStartPercent); err != nil {
		return nil, err
	}
	if f.journal < 1 || f.journal > maxJournal {
		return nil, fmt.Errorf("--journal-size %d: want 1 to %d", f.journal, maxJournal)
	}
	f.listen = dedupe(f.listen)
	if f.shutdown != "graceful" && f.shutdown != "hard" {
		return nil, fmt.Errorf("--shutdown %q: want graceful or hard", f.shutdown)
	}
	if err := checkGoBGPAPI(f.gobgpAPI); err != nil {
		return nil, err
	}
	if err := checkMaxConns(&f.operFlags); err != nil {
		return nil, err
	}
	return f, nil
}

func runCmd(ctx context.Context, args []string, stderr io.Writer) error {
	f, err := parseRunFlags(args, stderr)
	if err != nil {
		return err
	}
	log, level, err := newLogger(f.logLevel, f.logFormat, stderr)
	if err != nil {
		return err
	}
	f.level = level
	return run(ctx, f, log)
}

func run(ctx context.Context, f *runFlags, log *slog.Logger) error {
	gc := gcstart.New(f.gcStartPercent, log) // first: the start allocates from here on
	fdLimit := raiseOpenFiles(log)
	defer ignoreHangup(log)()
	src, kc, err := newSource(f, log)
	if err != nil {
		return err
	}
	reporter, err := newStatusReporter(f, kc, log)
	if err != nil {
		return err
	}
	var loop *agent.Loop
	speaker := gobgp.New(gobgp.Options{ListenAddresses: f.listen, Logger: log, GoBGPLevel: gobgpLevel(f.flagLevel()),
		GracefulShutdown: f.shutdown == "graceful", GRPCAddress: f.gobgpAPI, Report: func(a state.Action) { loop.Dispatch(a) },
		Families: speakerFamilies(f.opts().ExtraFamilies)})
	follow := newLevelFollower(f.flagLevel(), f.level, speaker.SetGoBGPLevel, log)
	defer speaker.Close()
	dpExec, dp, err := newDataplane(f, log)
	if err != nil {
		return err
	}
	opts := f.opts()
	if dp != nil { // docs/routes.md §9.7 rule 6: not with --dataplane none
		opts.RouteRescan = state.Duration{Duration: f.rescan}
	}
	published := []func(state.State){follow.observe}
	if reporter != nil {
		published = append(published, reporter.Observe)
	}
	if gc != nil {
		published = append(published, func(state.State) { gc.Touch() })
	}
	loop = agent.NewLoop(agent.LoopConfig{Initial: state.New(f.node, opts), Speaker: speaker, Dataplane: dpExec,
		Secrets: src, Services: serviceWatcher(src), Log: log, Journal: f.journal, NeighborSeries: f.seriesCap(),
		Published: published})
	loop.Dispatch(effects.ListRoutes(ctx, dp)) // the held routes, before anything is applied (docs/routes.md §9.6)
	ln, err := net.Listen("tcp", f.httpAddr)
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	httpMax, metricsMax := f.listenerCaps(fdLimit, log)
	defer ln.Close()
	metrics, metricsAddr, err := metricsPart(f.metricsAddr, metricsMax, loop)
	if err != nil {
		return err
	}
	parts := runParts(f, loop, src, speaker, dpExec, reporter, ln, httpMax, log)
	if metrics != nil {
		parts = append(parts, *metrics)
	}
	if gc != nil {
		parts = append(parts, part{name: "gc start", run: func(ctx context.Context) error { return gc.Run(ctx, loop.Ready) }})
	}
	log.Info("peeragent running", "node", f.node, "http", ln.Addr().String(), "metrics", metricsAddr, "source", sourceName(f))
	err = supervise(ctx, log, parts)
	log.Info("peeragent stopping", "error", err)
	return err
}

// runParts are the long-running parts of run, each started and joined by
// supervise: the loop, the admin listener, the source and the status
// reporter stop the agent when they fail (with a clear error, for the
// kubelet to restart it); the speaker's watch, the kernel facts and the
// VPP link are restarted.
func runParts(f *runFlags, loop *agent.Loop, src source, speaker *gobgp.Executor, dpExec effects.Executor,
	reporter *status.Reporter, ln net.Listener, httpMax int, log *slog.Logger) []part {
	admin, adminLn := agent.Server(ln, agent.Handler(loop), httpMax) // timeouts and a connection cap
	dispatch := loop.Dispatch
	parts := []part{
		{name: "loop", run: func(ctx context.Context) error { loop.Run(ctx); return nil }, forever: true},
		{name: "http listener " + ln.Addr().String(), run: serving(admin, adminLn), forever: true},
		{name: "source " + sourceName(f), run: func(ctx context.Context) error { return src.Run(ctx, dispatch) }, forever: true},
		// sessions, best paths and End-of-RIBs: one stream per speaker generation
		{name: "speaker watch", run: func(ctx context.Context) error { return speaker.Watch(ctx, dispatch) }, restart: true, forever: true},
		// docs/semantics.md §4: MD5 failures, optmem_max
		{name: "kernel facts", run: func(ctx context.Context) error { return (&watch.Kernel{Log: log}).Run(ctx, dispatch) }, restart: true, forever: true},
	}
	if reporter != nil {
		parts = append(parts, part{name: "status reporter", run: func(ctx context.Context) error { reporter.Run(ctx); return nil }, forever: true})
	}
	if r, ok := dpExec.(effects.Runner); ok { // e.g. a Dial-made VPP executor: connects, follows VPP's restarts
		parts = append(parts, part{name: "dataplane link", run: func(ctx context.Context) error { return r.Run(ctx, dispatch) }, restart: true})
	}
	return parts
}

// listenerCaps are the caps of the HTTP listeners, cut under a low
// open-files limit so that fdReserve descriptors stay for BGP.
func (f *runFlags) listenerCaps(fdLimit uint64, log *slog.Logger) (httpMax, metricsMax int) {
	metrics := f.metricsMaxConns
	if f.metricsAddr == "" {
		metrics = 0
	}
	httpMax, metricsMax, shrunk := listenerCaps(fdLimit, f.httpMaxConns, metrics)
	if shrunk {
		log.Warn("HTTP connection caps cut to leave descriptors for BGP under the open-files limit",
			"limit", fdLimit, "reserve", fdReserve, "httpMaxConns", httpMax, "metricsMaxConns", metricsMax)
	}
	return httpMax, metricsMax
}

func sourceName(f *runFlags) string {
	if f.from != "" {
		return "dir " + f.from
	}
	return "cluster " + f.group
}

// newDataplane is the executor of --dataplane (docs/routes.md §9.7) and
// the Dataplane it lists its own routes from (nil for none). Each is made
// by its package's one constructor; one that follows something (the VPP
// link) is an effects.Runner, which runParts starts.
func newDataplane(f *runFlags, log *slog.Logger) (effects.Executor, effects.Dataplane, error) {
	name, socket := f.dataplane, f.vppSocket
	if name == "" {
		name = "none"
		if socket != "" {
			name = "vpp"
		}
	}
	switch name {
	case "none":
		log.Info("no dataplane: routes are recorded as skipped")
		return effects.NoDataplane{}, nil, nil
	case "linux":
		e := linux.New(nil, linux.Options{Protocol: f.kernelProtocol, Metric: f.kernelMetric, Logger: log})
		return e, e, nil
	case "vpp":
		if socket == "" {
			return nil, nil, fmt.Errorf("--dataplane vpp needs --vpp-socket")
		}
		e := vpp.Dial(socket, log) // Run connects, waiting for VPP and following its restarts
		return e, e, nil
	}
	return nil, nil, fmt.Errorf("--dataplane %q: want vpp, linux or none", name)
}

// newSource is the source of --from or, in cluster mode, the Kubernetes
// source and the clients it reads through (nil with --from), which the
// status reporter shares.
func newSource(f *runFlags, log *slog.Logger) (source, *kubeClients, error) {
	if f.from != "" {
		if st, err := os.Stat(f.from); err != nil || !st.IsDir() {
			return nil, nil, fmt.Errorf("--from %s: not a readable directory", f.from)
		}
		d := watch.NewDir(f.from, log)
		d.Namespace = f.opts().Namespace // docs/semantics.md §1: Secrets of the agent's namespace only
		d.Node = f.node                  // docs/routes.md "Amendment to §1": this node's Pods only
		return d, nil, nil
	}
	kc, err := newKubeClients(f)
	if err != nil {
		return nil, nil, err
	}
	src, err := kc.source(f, log)
	return src, kc, err
}

var errNoCluster = errors.New("no cluster: give --from DIR, or run in a cluster / give --kubeconfig")

// kubeClients are cluster mode's one set of clients, over one rest
// config, and the API group resolved once (--calico-api-group auto asks
// the server's discovery): the source reads through them and the status
// reporter writes through them.
type kubeClients struct {
	client *watch.TypedClient
	dyn    dynamic.Interface
	group  string // watch.GroupCRD or watch.GroupV3
}

func newKubeClients(f *runFlags) (*kubeClients, error) {
	cfg, err := restConfig(f.kubeconfig, f.kubeContext)
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", errNoCluster, err)
	}
	client, err := watch.NewTypedClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	group, err := watch.ResolveGroup(client, f.group)
	if err != nil {
		return nil, err
	}
	return &kubeClients{client: client, dyn: dyn, group: group}, nil
}

// source is the Kubernetes source over kc.
func (kc *kubeClients) source(f *runFlags, log *slog.Logger) (*watch.Kube, error) {
	return watch.NewKube(watch.KubeConfig{Client: kc.client, Dynamic: kc.dyn, Group: kc.group,
		Namespace: f.opts().Namespace, Node: f.node, Log: log})
}

// newKube is the Kubernetes source alone (plan, rbac).
func newKube(f *runFlags, log *slog.Logger) (source, error) {
	kc, err := newKubeClients(f)
	if err != nil {
		return nil, err
	}
	return kc.source(f, log)
}

// speakerFamilies are the families of the speaker's RIB: those the reducer
// may give a neighbor (unicast of its address family and the extra
// families of that family, reducer/settings.go), not every family GoBGP
// knows (a table each, of 2,048 shards, in each of its two RIBs).
func speakerFamilies(extra []string) []string {
	return append([]string{"ipv4-unicast", "ipv6-unicast"}, extra...)
}
