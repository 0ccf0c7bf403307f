// Command meshsim simulates N Kubernetes nodes of a Calico cluster on this
// machine and measures their BGP speakers side by side: one network
// namespace per node on a shared bridge (real packets), the node-to-node
// mesh, one pod block per node; run once with one peeragent per node
// (--dataplane linux, from a manifest directory written for the node) and
// once with one BIRD 2 per node configured as calico-node's confd
// configures it; with -speakers …,gobgp,… also once with the GoBGP floor
// (tools/meshsim/floor: the agent's GoBGP v4.8.0 configured as the agent
// configures it, and nothing else). Per speaker it reports RSS, the CPU to converge, idle CPU,
// the re-convergence after SIGKILL and restart of 20% of the nodes, the
// connections made and refused meanwhile, and the route changes observer
// nodes (never restarted) saw in their kernels: a markdown table, and with
// -doc the "Mesh simulation" section of docs/performance.md. `make
// mesh-sim N=…` runs it; it needs root, iproute2 and BIRD 2.
//
// Everything it makes (namespaces named meshsim-PID-…, processes, a
// temporary directory) is removed when it ends, on an error or on
// SIGINT/SIGTERM too; the speakers die with it if it is killed (Pdeathsig),
// and -cleanup removes the namespaces and the work directory such a run left.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type config struct {
	sizes      []int // the N of each run, in order
	n          int   // the N of the run in progress
	speakers   []string
	idle       time.Duration
	settle     time.Duration
	restart    float64
	observers  int
	timeout    time.Duration
	agentBin   string
	birdBin    string
	agentFlags []string
	floorBin   string
	floorFlags []string
	keep       bool
	md         string
	doc        string
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var c config
	var speakers string
	var af, ff listFlag
	cleanup := flag.Bool("cleanup", false, "remove the namespaces of earlier runs that were killed, and exit")
	sizes := flag.String("n", "10", "number of nodes; a comma-separated list runs each size in turn (10,30: a table each and RSS fitted per neighbor)")
	flag.StringVar(&speakers, "speakers", "peeragent,bird", "speakers to run, in order: peeragent, gobgp (the GoBGP floor: the agent's GoBGP alone, tools/meshsim/floor), gobgp-nolimit (the floor without prefix limit), bird")
	flag.DurationVar(&c.idle, "idle", 60*time.Second, "window over which idle CPU is measured, after convergence (60 s: two of GoBGP's 30 s keepalives and the agent's 30 s route rescans, 30 of BIRD's 2 s kernel and device scans)")
	flag.DurationVar(&c.settle, "settle", 5*time.Second, "wait after each convergence before the next measurement")
	flag.Float64Var(&c.restart, "restart", 0.2, "fraction of the nodes killed (SIGKILL) and restarted")
	flag.IntVar(&c.observers, "observers", 3, "nodes (never restarted) whose kernel route changes are counted")
	flag.DurationVar(&c.timeout, "timeout", 0, "bound on each convergence (default 60 s + 1 s per node)")
	flag.StringVar(&c.agentBin, "peeragent", "", "peeragent binary (default: built from ./cmd/peeragent as the image's: CGO_ENABLED=0, -trimpath, -s -w)")
	flag.StringVar(&c.birdBin, "bird", "", "bird binary (default: from PATH or /usr/sbin)")
	flag.Var(&af, "agent-flag", "extra flag for peeragent run (repeatable)")
	flag.StringVar(&c.floorBin, "floor", "", "GoBGP floor binary (default: built from ./tools/meshsim/floor/cmd/meshsim-floor as the agent is)")
	flag.Var(&ff, "floor-flag", "extra flag for the GoBGP floor, e.g. -floor-flag=-max-prefixes=0 (repeatable)")
	flag.BoolVar(&c.keep, "keep", false, "keep the work directory (configs, logs) and print its path")
	flag.StringVar(&c.md, "md", "", "also write the markdown table to this file")
	flag.StringVar(&c.doc, "doc", "", "write the results section into this document (docs/performance.md)")
	flag.Parse()
	c.agentFlags, c.floorFlags = af, ff
	c.speakers = strings.Split(speakers, ",")
	for _, v := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			fatal(fmt.Errorf("-n %q: %w", *sizes, err))
		}
		c.sizes = append(c.sizes, n)
	}
	if *cleanup {
		removed, err := cleanupStale()
		fmt.Printf("removed %d namespaces and work directories %v\n", len(removed), removed)
		if err != nil {
			fatal(err)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "meshsim:", err)
	os.Exit(1)
}

func run(ctx context.Context, c config) error {
	rep, err := measure(ctx, c)
	if err != nil {
		return err
	}
	table := rep.markdown()
	fmt.Print(table)
	if c.md != "" {
		if err := os.WriteFile(c.md, []byte(table), 0o644); err != nil {
			return err
		}
	}
	if c.doc != "" {
		return writeDoc(c.doc, rep.section())
	}
	return nil
}

// measure runs the simulation once per speaker, each in a topology of its
// own, removed before the next.
func measure(ctx context.Context, c config) (rep report, err error) {
	if os.Geteuid() != 0 {
		return rep, fmt.Errorf("needs root (network namespaces)")
	}
	for _, n := range c.sizes {
		if n < 2 || n > 250 {
			return rep, fmt.Errorf("-n %d: want 2 to 250", n)
		}
	}
	// Named after the pid, as the namespaces are, for -cleanup.
	work, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", nsPrefix, os.Getpid()))
	if err != nil {
		return rep, err
	}
	defer func() {
		if c.keep {
			fmt.Fprintln(os.Stderr, "meshsim: work directory kept:", work)
			return
		}
		if rerr := os.RemoveAll(work); rerr != nil && err == nil {
			err = rerr
		}
	}()
	var sps []speaker
	built := map[string]string{}
	for _, s := range c.speakers {
		sp, err := newSpeaker(ctx, s, c, work, built)
		if err != nil {
			return rep, err
		}
		sps = append(sps, sp)
	}
	rep = report{sizes: c.sizes, idle: c.idle, settle: c.settle, loadBefore: loadavg(), started: time.Now()}
	for _, n := range c.sizes {
		cn := c
		cn.n = n
		if cn.timeout == 0 {
			cn.timeout = 60*time.Second + time.Duration(n)*time.Second
		}
		for _, sp := range sps {
			fmt.Fprintf(os.Stderr, "meshsim: %s, %d nodes (load %s)\n", sp.name(), n, loadavg())
			r, err := simulate(ctx, cn, sp, work)
			if err != nil {
				return rep, fmt.Errorf("%s, %d nodes: %w", sp.name(), n, err)
			}
			rep.runs = append(rep.runs, r)
		}
	}
	rep.loadAfter = loadavg()
	rep.elapsed = time.Since(rep.started)
	return rep, nil
}

// releaseBuildFlags are the go build flags of the image's binary
// (tools/image, make image; make build too), with CGO_ENABLED=0: the
// binary a node runs is measured. A cgo build maps libc and the dynamic
// loader as well (2 MiB more RSS a speaker), and the external linker
// writes its output so that the page cache holds it in folios of up to
// 2 MiB, which Linux maps whole: nearly all of the binary becomes each
// speaker's RssFile (docs/performance.md "What the binary maps").
// TestReleaseBuildFlags compares them with the Makefile's and the image's.
var releaseBuildFlags = []string{"-trimpath", "-ldflags", "-s -w"}

func newSpeaker(ctx context.Context, name string, c config, work string, built map[string]string) (speaker, error) {
	switch name {
	case "peeragent":
		bin := c.agentBin
		if bin == "" {
			var err error
			if bin, err = build(ctx, built, work, "peeragent", "./cmd/peeragent"); err != nil {
				return nil, err
			}
		}
		return agent{bin: bin, extra: c.agentFlags}, nil
	case "gobgp", "gobgp-nolimit":
		bin := c.floorBin
		if bin == "" {
			var err error
			if bin, err = build(ctx, built, work, "meshsim-floor", "./tools/meshsim/floor/cmd/meshsim-floor"); err != nil {
				return nil, err
			}
		}
		return floorSpeaker{bin: bin, extra: c.floorFlags, noLimit: name == "gobgp-nolimit"}, nil
	case "bird":
		bin := c.birdBin
		if bin == "" {
			var err error
			if bin, err = exec.LookPath("bird"); err != nil {
				if _, serr := os.Stat("/usr/sbin/bird"); serr != nil {
					return nil, fmt.Errorf("bird not found (install bird2): %w", err)
				}
				bin = "/usr/sbin/bird"
			}
		}
		return bird{bin: bin}, nil
	}
	return nil, fmt.Errorf("-speakers: unknown speaker %q (want peeragent, gobgp, gobgp-nolimit or bird)", name)
}

// build builds pkg into work/name as the image's binary is built, once
// per run of meshsim (built remembers).
func build(ctx context.Context, built map[string]string, work, name, pkg string) (string, error) {
	if bin, ok := built[pkg]; ok {
		return bin, nil
	}
	bin := filepath.Join(work, name)
	fmt.Fprintf(os.Stderr, "meshsim: go build %s (as the image's binary)\n", pkg)
	cmd := exec.CommandContext(ctx, "go", append([]string{"build"}, append(releaseBuildFlags, "-o", bin, pkg)...)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s (run from the repository's root): %w", pkg, err)
	}
	built[pkg] = bin
	return bin, nil
}
