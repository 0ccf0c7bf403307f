// Package floor is the GoBGP floor: a bare loop of GoBGP API
// calls (no agent code) on an embedded speaker, for comparing GoBGP releases
// side by side. It prints Go benchmark-format lines that benchstat reads:
//
//	BenchmarkFloor/op=update-inplace/neighbors=1000/families=ipv4/gobgp=v4.8.0  1000  41234 ns/op  ...
//
// The loop is here, with no GoBGP import; the commands in v3/ (GoBGP
// v3.37.0) and v4/ (one go.*.mod per v4 release) only adapt the API (import
// path and logger) and call Main. See README.md and run.sh.
package floor

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Each neighbor is a passive peer on 10.0.0.0/8 (10.0.0.1 and up), AS
// peerASN; the speaker has no listener (ListenPort -1), so no connection is
// ever attempted in either direction and every neighbor stays Idle/Active.
const (
	LocalASN = 64512
	peerASN  = 64513
	otherASN = 64514 // the session-resetting change: peerASN <-> otherASN
	holdA    = 90    // the in-place change: hold time holdA <-> holdB (keepalive = hold/3)
	holdB    = 60
)

// Speaker is one embedded GoBGP server, started, with its neighbors; it is
// implemented per major version (v3/main.go, v4/main.go).
type Speaker interface {
	// AddPeer adds a passive neighbor with the given peer AS and hold time
	// (keepalive: a third of it).
	AddPeer(addr string, asn uint32, hold uint64) error
	// UpdatePeer sends the neighbor's whole config, as AddPeer would.
	UpdatePeer(addr string, asn uint32, hold uint64) error
	DeletePeer(addr string) error
	// HoldTime is a configured neighbor's hold time as ListPeer reports it.
	HoldTime(addr string) (uint64, error)
	Stop() error
}

// neighbor is the wanted configuration of one neighbor, kept so that every
// call sends a complete config with exactly one field changed.
type neighbor struct {
	addr string
	asn  uint32
	hold uint64
}

func addr(i int) string {
	i++ // skip 10.0.0.0
	return fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
}

// NewSpeaker makes and starts a speaker (AS LocalASN, router ID
// 10.255.255.1, no listener) whose neighbors have the given unicast
// families ("ipv4", "ipv6").
type NewSpeaker func(families []string) (Speaker, error)

// Main parses the flags and runs the measurements on speakers made by
// newSpeaker.
func Main(newSpeaker NewSpeaker) {
	sizes := flag.String("neighbors", "1000", "comma-separated neighbor counts")
	count := flag.Int("count", 1, "runs per neighbor count (a fresh speaker each)")
	fams := flag.String("families", "ipv4", "ipv4 or ipv4+ipv6 (unicast)")
	ops := flag.String("ops", "add,heap,update-inplace,update-reset,delete", "operations to report, in this order")
	calls := flag.Int("calls", 1000, "UpdatePeer/DeletePeer calls per operation (spread over the neighbors)")
	header := flag.Bool("header", true, "print the goos/goarch/pkg/cpu header")
	flag.Parse()

	families := strings.Split(*fams, "+")
	want := map[string]bool{}
	for _, op := range strings.Split(*ops, ",") {
		want[op] = true
	}
	version := gobgpVersion()
	if *header {
		fmt.Printf("goos: %s\ngoarch: %s\npkg: github.com/peeragent/peeragent/tools/gobgpfloor\ncpu: %s\n",
			runtime.GOOS, runtime.GOARCH, cpuModel())
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			fatal(fmt.Errorf("bad -neighbors %q", s))
		}
		for range *count {
			prefix := func(op string) string {
				return fmt.Sprintf("BenchmarkFloor/op=%s/neighbors=%d/families=%s/gobgp=%s", op, n, *fams, version)
			}
			if err := run(newSpeaker, n, families, min(*calls, n), want, prefix); err != nil {
				fatal(err)
			}
		}
	}
}

// run does one measurement: a fresh speaker, n neighbors added, then each
// wanted operation, every one at n configured neighbors.
func run(newSpeaker NewSpeaker, n int, families []string, calls int, want map[string]bool, name func(string) string) error {
	heap0, _ := memStats()
	sp, err := newSpeaker(families)
	if err != nil {
		return err
	}
	nbrs := make([]neighbor, n)
	for i := range nbrs {
		nbrs[i] = neighbor{addr: addr(i), asn: peerASN, hold: holdA}
	}

	// AddPeer: n calls, from 0 to n-1 neighbors configured.
	lat := make([]time.Duration, 0, n)
	_, alloc0 := memStats()
	t0 := time.Now()
	for _, nb := range nbrs {
		t := time.Now()
		if err := sp.AddPeer(nb.addr, nb.asn, nb.hold); err != nil {
			return fmt.Errorf("AddPeer %s: %w", nb.addr, err)
		}
		lat = append(lat, time.Since(t))
	}
	total := time.Since(t0)
	_, alloc1 := memStats()
	if want["add"] {
		report(name("add"), lat, total, alloc1-alloc0, "configure-s", total.Seconds())
	}

	// Heap with n idle neighbors, the speaker included (heap0 is before
	// the speaker was made).
	time.Sleep(200 * time.Millisecond) // let the per-neighbor goroutines settle
	heap1, _ := memStats()
	if want["heap"] {
		d := float64(heap1) - float64(heap0)
		fmt.Printf("%s\t1\t%.0f B/neighbor\t%.1f speaker-MiB\n", name("heap"), d/float64(n), d/(1<<20))
	}

	// In-place UpdatePeer: hold time (and keepalive) holdA <-> holdB.
	if want["update-inplace"] {
		var last neighbor
		err := measure(name("update-inplace"), calls, n, func(i int) error {
			nb := &nbrs[i]
			nb.hold = holdA + holdB - nb.hold
			last = *nb
			return sp.UpdatePeer(nb.addr, nb.asn, nb.hold)
		})
		if err != nil {
			return err
		}
		// The change took effect (in place: GoBGP copies Timers.Config
		// without a reset, see README.md).
		if h, err := sp.HoldTime(last.addr); err != nil || h != last.hold {
			return fmt.Errorf("in-place UpdatePeer of %s: hold time %d (%v), want %d", last.addr, h, err, last.hold)
		}
	}

	// Session-resetting UpdatePeer: peer AS peerASN <-> otherASN.
	if want["update-reset"] {
		err := measure(name("update-reset"), calls, n, func(i int) error {
			nb := &nbrs[i]
			nb.asn = peerASN + otherASN - nb.asn
			return sp.UpdatePeer(nb.addr, nb.asn, nb.hold)
		})
		if err != nil {
			return err
		}
	}

	// DeletePeer at n neighbors: each deleted neighbor is added back
	// (untimed) before the next call.
	if want["delete"] {
		var lat []time.Duration
		var el time.Duration
		_, a0 := memStats()
		for j := range calls {
			nb := nbrs[spread(j, calls, n)]
			t := time.Now()
			if err := sp.DeletePeer(nb.addr); err != nil {
				return fmt.Errorf("DeletePeer %s: %w", nb.addr, err)
			}
			d := time.Since(t)
			el += d
			lat = append(lat, d)
			if err := sp.AddPeer(nb.addr, nb.asn, nb.hold); err != nil {
				return fmt.Errorf("AddPeer %s again: %w", nb.addr, err)
			}
		}
		_, a1 := memStats()
		// a1-a0 includes the re-adds; reported as is (B/op is delete+add).
		report(name("delete"), lat, el, a1-a0)
	}
	if err := sp.Stop(); err != nil {
		return fmt.Errorf("StopBgp: %w", err)
	}
	return nil
}

// spread picks the j-th of calls neighbors, evenly over n.
func spread(j, calls, n int) int { return j * n / calls }

// measure makes calls calls of fn, back to back, on neighbors spread over n.
func measure(name string, calls, n int, fn func(i int) error) error {
	lat := make([]time.Duration, 0, calls)
	_, a0 := memStats()
	t0 := time.Now()
	for j := range calls {
		i := spread(j, calls, n)
		t := time.Now()
		if err := fn(i); err != nil {
			return fmt.Errorf("%s: neighbor %s: %w", name, addr(i), err)
		}
		lat = append(lat, time.Since(t))
	}
	total := time.Since(t0)
	_, a1 := memStats()
	report(name, lat, total, a1-a0)
	return nil
}

// report prints one benchmark line: N = calls, ns/op = mean, then the
// median, p99, calls per second and bytes allocated per call.
func report(name string, lat []time.Duration, total time.Duration, alloc uint64, extra ...any) {
	slices.Sort(lat)
	n := len(lat)
	fmt.Printf("%s\t%d\t%.0f ns/op\t%d p50-ns\t%d p99-ns\t%.1f calls/s\t%.0f B/op",
		name, n, float64(total.Nanoseconds())/float64(n), pct(lat, 0.50).Nanoseconds(), pct(lat, 0.99).Nanoseconds(),
		float64(n)/total.Seconds(), float64(alloc)/float64(n))
	for i := 0; i+1 < len(extra); i += 2 {
		fmt.Printf("\t%.2f %s", extra[i+1], extra[i])
	}
	fmt.Println()
}

// pct is the nearest-rank percentile of sorted durations.
func pct(sorted []time.Duration, p float64) time.Duration {
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// memStats is HeapInuse and TotalAlloc after a full GC.
func memStats() (heapInuse, totalAlloc uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.TotalAlloc
}

// gobgpVersion is the GoBGP module version this binary was built with.
func gobgpVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if strings.HasPrefix(d.Path, "github.com/osrg/gobgp") {
				if d.Replace != nil {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return "unknown"
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "gobgpfloor:", err)
	os.Exit(1)
}
