package gobgp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"syscall"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// ownPathCount is a node with many own paths: its blocks and many
// borrowed /32s (docs/routes.md §8.1).
const ownPathCount = 10000

// ownPaths are n /32 paths with the node's address as next hop and a
// community, as the reducer derives them.
func ownPaths(n int) []*state.Path {
	out := make([]*state.Path, n)
	for i := range out {
		a := netip.AddrFrom4([4]byte{100, byte(64 + i>>16), byte(i >> 8), byte(i)})
		out[i] = &state.Path{Prefix: netip.PrefixFrom(a, 32), NextHop: netip.MustParseAddr("10.0.0.1"),
			Communities: []string{"65000:100"}, Origins: []string{fmt.Sprintf("pod/ns/p-%d", i)}}
	}
	return out
}

// BenchmarkOwnPaths: 10,000 own paths into GoBGP's RIB, the executor
// (one Execute of the add-path effects, as one Diff gives them) against
// the floor (a fresh GoBGP server and a plain loop of the same AddPath
// requests, built before the clock starts). Each iteration runs both;
// agent/floor is the ratio of their wall times, cpu-agent/floor of the
// process CPU time each took (less sensitive to a shared machine).
func BenchmarkOwnPaths(b *testing.B) {
	paths := ownPaths(ownPathCount)
	var agent, floor, agentCPU, floorCPU time.Duration
	for i := 0; i < b.N; i++ {
		runs := []func(){func() {
			c0 := cpuTime()
			floor += floorOwnPaths(b, paths)
			floorCPU += cpuTime() - c0
		}, func() {
			c0 := cpuTime()
			agent += executorOwnPaths(b, paths)
			agentCPU += cpuTime() - c0
		}}
		// Take turns going first (over -count runs too): the first one's
		// stopped server is still being torn down and collected while the
		// second runs.
		if ownPathRuns++; ownPathRuns%2 == 0 {
			runs[0], runs[1] = runs[1], runs[0]
		}
		runs[0]()
		runs[1]()
	}
	n := float64(b.N)
	b.ReportMetric(float64(agent.Nanoseconds())/n, "ns/op")
	b.ReportMetric(agent.Seconds()/n, "agent-s")
	b.ReportMetric(floor.Seconds()/n, "floor-s")
	b.ReportMetric(agent.Seconds()/floor.Seconds(), "agent/floor")
	b.ReportMetric(agentCPU.Seconds()/floorCPU.Seconds(), "cpu-agent/floor")
}

// cpuTime is the CPU time (user and system) the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ownPathRuns counts BenchmarkOwnPaths iterations in this process, for
// the turns.
var ownPathRuns int

var benchGlobal = &api.Global{Asn: 64512, RouterId: "10.0.0.1", ListenPort: -1}

func floorOwnPaths(b *testing.B, paths []*state.Path) time.Duration {
	reqs := make([]apiutil.AddPathRequest, len(paths))
	for i, p := range paths {
		ap, err := pathFor(p)
		if err != nil {
			b.Fatal(err)
		}
		reqs[i] = apiutil.AddPathRequest{Paths: []*apiutil.Path{ap}}
	}
	lg, lv := slog.New(slog.NewTextHandler(io.Discard, nil)), new(slog.LevelVar)
	s := server.NewBgpServer(server.LoggerOption(lg, lv))
	go s.Serve()
	if err := s.StartBgp(context.Background(), &api.StartBgpRequest{Global: benchGlobal}); err != nil {
		b.Fatal(err)
	}
	defer s.StopBgp(context.Background(), &api.StopBgpRequest{})
	runtime.GC()
	t0 := time.Now()
	for _, r := range reqs {
		if _, err := s.AddPath(r); err != nil {
			b.Fatal(err)
		}
	}
	el := time.Since(t0)
	if got := ribCount(b, s); got != len(paths) {
		b.Fatalf("floor RIB holds %d paths, want %d", got, len(paths))
	}
	return el
}

func executorOwnPaths(b *testing.B, paths []*state.Path) time.Duration {
	e := New(Options{ListenAddresses: []string{"127.0.0.1"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		GoBGPLevel: slog.LevelError})
	defer e.Close()
	ctx := context.Background()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := uint16(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	srv := state.Server{ASN: 64512, RouterID: netip.MustParseAddr("10.0.0.1"), ListenPort: port}
	for _, r := range e.Execute(ctx, []effects.Effect{effects.StartServer{Server: srv}}) {
		if f, ok := r.(state.ServerApplyFailed); ok {
			b.Fatal(f.Error)
		}
	}
	effs := make([]effects.Effect, len(paths))
	for i, p := range paths {
		effs[i] = effects.AddPath{Path: p, Gen: uint64(i + 1)}
	}
	runtime.GC()
	t0 := time.Now()
	res := e.Execute(ctx, effs)
	el := time.Since(t0)
	for _, r := range res {
		if f, ok := r.(state.PathApplyFailed); ok {
			b.Fatal(f.Error)
		}
	}
	if got := ribCount(b, e.Speaker()); got != len(paths) {
		b.Fatalf("agent RIB holds %d paths, want %d", got, len(paths))
	}
	return el
}

func ribCount(b *testing.B, s *server.BgpServer) int {
	n := 0
	err := s.ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_GLOBAL, Family: bgp.RF_IPv4_UC},
		func(bgp.NLRI, []*apiutil.Path) { n++ })
	if err != nil {
		b.Fatal(err)
	}
	return n
}
