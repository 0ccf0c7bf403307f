package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// poll is how often convergence is checked.
const poll = 100 * time.Millisecond

// runResult is what one speaker's run measured.
type runResult struct {
	speaker     string
	n           int
	converge    time.Duration   // from the first start until every node converged
	cpuConverge []time.Duration // per speaker, from its start until then
	idleCPU     []float64       // per speaker, share of one core over the idle window
	rss         []int64         // per speaker, after the idle window: VmRSS
	anon        []int64         // RssAnon, at the same time
	pss         []int64         // Pss, at the same time
	idle        time.Duration

	restarted  []int // node indexes
	reconverge time.Duration
	sessions   int // sessions the restart broke, to be restored
	tcp        tcpCounters
	logs       map[string]int
	observers  []int
	routeNew   int
	routeDel   int
	routeSeen  []string
}

// sim is one run in progress: the topology and every node's speaker.
type sim struct {
	c     config
	sp    speaker
	topo  *topology
	dirs  []string
	procs []*proc
	h     handles
	gen   int
}

func simulate(ctx context.Context, c config, sp speaker, work string) (res runResult, err error) {
	s := &sim{c: c, sp: sp, topo: newTopology(c.n, fmt.Sprintf("%d", time.Now().UnixNano()%1e6)), h: handles{}}
	res = runResult{speaker: sp.name(), n: c.n, logs: map[string]int{}}
	defer func() {
		s.h.close()
		s.stopAll()
		if derr := s.topo.destroy(); derr != nil && err == nil {
			err = derr
		}
	}()
	if err := s.topo.create(ctx, work); err != nil {
		return res, err
	}
	for _, nd := range s.topo.nodes {
		// A directory per speaker, size and node: the log counts glob
		// every log of it.
		dir := filepath.Join(work, fmt.Sprintf("%s-n%d-%d", slug(sp.name()), c.n, nd.index))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return res, err
		}
		if err := sp.prepare(s.topo, nd, dir); err != nil {
			return res, err
		}
		s.dirs = append(s.dirs, dir)
	}
	first := time.Now()
	for i, nd := range s.topo.nodes {
		p, err := start(sp, nd, s.dirs[i], s.gen)
		if err != nil {
			return res, err
		}
		s.procs = append(s.procs, p)
	}
	at, err := s.converged(ctx, true)
	if err != nil {
		return res, fmt.Errorf("initial convergence: %w", err)
	}
	res.converge = at.Sub(first)
	res.cpuConverge = s.cpuAll()
	fmt.Fprintf(os.Stderr, "meshsim: %s converged in %v\n", sp.name(), res.converge.Round(time.Millisecond))

	if err := sleep(ctx, c.settle); err != nil {
		return res, err
	}
	before := s.cpuAll()
	t0 := time.Now()
	if err := sleep(ctx, c.idle); err != nil {
		return res, err
	}
	after := s.cpuAll()
	res.idle = time.Since(t0)
	for i := range after {
		res.idleCPU = append(res.idleCPU, float64(after[i]-before[i])/float64(res.idle))
		m, _ := memOf(s.procs[i].p.Pid())
		res.rss, res.anon, res.pss = append(res.rss, m.rss), append(res.anon, m.anon), append(res.pss, m.pss)
	}
	return res, s.restartPhase(ctx, &res)
}

// restartPhase kills 20% of the nodes' speakers with SIGKILL, starts them
// again at once, and measures until every session is back.
func (s *sim) restartPhase(ctx context.Context, res *runResult) error {
	n := len(s.topo.nodes)
	k := max(1, int(math.Round(s.c.restart*float64(n))))
	chosen := map[int]bool{}
	for j := 0; j < k; j++ {
		i := int((float64(j) + 0.5) * float64(n) / float64(k))
		chosen[i] = true
		res.restarted = append(res.restarted, i+1)
	}
	// Observers spread over the address order: first, last, middle...
	var obs []int
	cands := []int{0, n - 1, n / 2, n / 4, 3 * n / 4}
	for i := range n {
		cands = append(cands, i)
	}
	for _, i := range cands {
		if len(obs) < s.c.observers && !chosen[i] && !contains(obs, i) {
			obs = append(obs, i)
		}
	}
	var mons []*routeMonitor
	for _, i := range obs {
		m, err := monitorRoutes(s.topo.nodes[i].ns)
		if err != nil {
			return err
		}
		mons = append(mons, m)
		res.observers = append(res.observers, i+1)
	}
	tcpBefore, err := s.tcpAll()
	if err != nil {
		return err
	}
	logsBefore := s.logCounts()
	res.sessions = k*(n-1) - k*(k-1)/2

	s.gen++
	killed := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range chosen {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.procs[i].p.Kill(); err != nil {
				errs[i] = err
				return
			}
			p, err := start(s.sp, s.topo.nodes[i], s.dirs[i], s.gen)
			if err != nil {
				errs[i] = err
				return
			}
			s.procs[i] = p
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	at, err := s.converged(ctx, false)
	if err != nil {
		return fmt.Errorf("re-convergence: %w", err)
	}
	res.reconverge = at.Sub(killed)
	fmt.Fprintf(os.Stderr, "meshsim: %s re-converged in %v after restarting %d\n", s.sp.name(), res.reconverge.Round(time.Millisecond), k)
	if err := sleep(ctx, s.c.settle); err != nil {
		return err
	}
	for _, m := range mons {
		nw, dl, seen, err := m.stop()
		if err != nil {
			return fmt.Errorf("route monitor in %s: %w", m.ns, err)
		}
		res.routeNew += nw
		res.routeDel += dl
		res.routeSeen = append(res.routeSeen, seen...)
	}
	tcpAfter, err := s.tcpAll()
	if err != nil {
		return err
	}
	res.tcp = tcpAfter.sub(tcpBefore)
	for label, v := range s.logCounts() {
		res.logs[label] = v - logsBefore[label]
	}
	return nil
}

// converged polls until every node has a session with every other: first
// from the kernel (each namespace's ESTABLISHED connections on port 179,
// and, when routes is set, its learned routes to the other blocks), which
// costs the speakers nothing, then from each speaker's own report. It
// returns the time the last condition held.
func (s *sim) converged(ctx context.Context, routes bool) (time.Time, error) {
	deadline := time.Now().Add(s.c.timeout)
	want := len(s.topo.nodes) - 1
	kernelOK := func() (bool, string, error) {
		for _, nd := range s.topo.nodes {
			p, err := s.h.bgpPeers(nd.ns)
			if err != nil {
				return false, "", err
			}
			if p != want {
				return false, fmt.Sprintf("%s: %d of %d TCP sessions", nd.name, p, want), nil
			}
			if routes {
				r, err := s.h.learnedRoutes(nd.ns)
				if err != nil {
					return false, "", err
				}
				if r != want {
					return false, fmt.Sprintf("%s: %d of %d routes", nd.name, r, want), nil
				}
			}
		}
		return true, "", nil
	}
	speakerOK := func() (bool, string) {
		for i, nd := range s.topo.nodes {
			e, err := s.sp.established(nd, s.dirs[i])
			if err != nil || e != want {
				return false, fmt.Sprintf("%s: %d of %d Established (%v)", nd.name, e, want, err)
			}
		}
		return true, ""
	}
	var why string
	for {
		ok, w, err := kernelOK()
		if err != nil {
			return time.Time{}, err
		}
		why = w
		if ok {
			at := time.Now()
			if ok, w := speakerOK(); ok {
				return at, nil
			} else {
				why = w
			}
		}
		if err := s.exited(); err != nil {
			return time.Time{}, err
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("not within %v: %s", s.c.timeout, why)
		}
		if err := sleep(ctx, poll); err != nil {
			return time.Time{}, err
		}
	}
}

func (s *sim) exited() error {
	for i, p := range s.procs {
		if done, st := p.p.Exited(); done {
			return fmt.Errorf("%s on %s exited (%v); its log:\n%s", s.sp.name(), s.topo.nodes[i].name, st, tail(p.log, 20))
		}
	}
	return nil
}

func (s *sim) cpuAll() []time.Duration {
	out := make([]time.Duration, len(s.procs))
	for i, p := range s.procs {
		out[i], _ = cpuTime(p.p.Pid())
	}
	return out
}

func (s *sim) tcpAll() (tcpCounters, error) {
	var sum tcpCounters
	for _, nd := range s.topo.nodes {
		c, err := readTCP(nd.ns)
		if err != nil {
			return sum, err
		}
		sum = sum.add(c)
	}
	return sum, nil
}

// logCounts sums the labelled lines of every log of every node, all
// generations.
func (s *sim) logCounts() map[string]int {
	out := map[string]int{}
	for _, dir := range s.dirs {
		logs, _ := filepath.Glob(filepath.Join(dir, "speaker.*.log"))
		for _, l := range logs {
			for k, v := range s.sp.logCounts(l) {
				out[k] += v
			}
		}
	}
	return out
}

// stopAll ends every speaker: SIGKILL, which leaves nothing behind that
// the namespaces' removal does not.
func (s *sim) stopAll() {
	var wg sync.WaitGroup
	for _, p := range s.procs {
		wg.Add(1)
		go func() { defer wg.Done(); _ = p.p.Kill() }()
	}
	wg.Wait()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func tail(path string, lines int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	s := string(raw)
	for i, n := len(s)-1, 0; i >= 0; i-- {
		if s[i] == '\n' {
			n++
			if n > lines {
				return s[i+1:]
			}
		}
	}
	return s
}

// slug is a speaker's name as a file name: "GoBGP floor, no prefix
// limit" is "GoBGP-floor-no-prefix-limit".
func slug(name string) string {
	return strings.Join(strings.FieldsFunc(name, func(r rune) bool { return r == ' ' || r == ',' || r == '/' }), "-")
}
