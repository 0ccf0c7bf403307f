package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/effects/gobgp"
	"github.com/peeragent/peeragent/state"
)

// scrapeRoutes is how many /32s the peer of BenchmarkScrape sends.
const scrapeRoutes = 100_000

// scrapeAgent is BenchmarkScrape's agent, kept for the process's life.
var scrapeAgent *agent.Loop

// BenchmarkScrape: one GET /metrics of an agent (the real Loop over the
// real GoBGP executor, --dataplane none) that has learned 100,000 /32s
// from a BGPPeer (another GoBGP on 127.0.0.2): the cost anyone who reaches
// --metrics-addr can make the agent pay per request. Reported per scrape:
// ns/op (wall time) and cpu-ms/scrape (the process's CPU time, the
// speaker's goroutines included: a collector that asks the speaker to
// walk its Adj-RIBs pays there). Setup (the peer's 100,000 paths reaching
// the agent's State: about 40 s on 2 busy cores) is outside the timings
// and done once per process; run with -benchtime 20x or so.
func BenchmarkScrape(b *testing.B) {
	b.Run(fmt.Sprintf("routes=%d", scrapeRoutes), func(b *testing.B) {
		if scrapeAgent == nil { // built once: the runner calls this with b.N=1, then more
			scrapeAgent, _ = learnedAgent(b, scrapeRoutes)
		}
		h := agent.MetricsHandler(scrapeAgent)
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		runtime.GC()
		cpu0 := cpuTime()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("/metrics: %d", rec.Code)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1e3/float64(b.N), "cpu-ms/scrape")
	})
}

// learnedAgent is the agent of BenchmarkScrape once its State has n
// learned prefixes.
func learnedAgent(b testing.TB, n int) (*agent.Loop, func()) {
	l, stop := startLearnedAgent(b, n, uint32(n))
	t0 := time.Now()
	waitUntil(b, fmt.Sprintf("%d learned prefixes", n), 10*time.Minute, 100*time.Millisecond, func() bool {
		return l.State().Inputs.Learned.Len() == n
	})
	if testing.Verbose() {
		b.Logf("%d prefixes learned in %s", n, time.Since(t0).Round(time.Millisecond))
	}
	return l, stop
}

// startLearnedAgent is learnedAgent's agent, with a prefix limit of its
// own, before the routes arrive.
func startLearnedAgent(b testing.TB, n int, limit uint32) (*agent.Loop, func()) {
	l, _, stop := startPeerAgent(b, n, limit, nil)
	return l, stop
}

// startPeerAgent is the agent (with a prefix limit of its own; 0: the
// default) and its one peer, the BGPPeer "tor" with annotations: a GoBGP
// speaker originating n /32s (routePeer). upsert gives tor other
// annotations; stop ends both.
func startPeerAgent(b testing.TB, n int, limit uint32, annotations map[string]string) (l *agent.Loop, upsert func(map[string]string), stop func()) {
	log, _ := quietLog()
	agentPort, peerPort := benchPort(b), benchPort(b)
	exec := gobgp.New(gobgp.Options{ListenAddresses: []string{"127.0.0.1"}, Logger: log, GoBGPLevel: slog.LevelError})
	// The prefix limit (docs/routes.md §9.9) raised to what the peer sends.
	l = agent.NewLoop(agent.LoopConfig{Initial: state.New("node-a", state.Options{MaxPrefixes: limit}), Speaker: exec,
		Dataplane: effects.NoDataplane{}, Log: log, Journal: 1000})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 3)
	go func() { l.Run(ctx); done <- struct{}{} }()
	go func() { exec.WatchSessions(ctx, l.Dispatch); done <- struct{}{} }()
	go func() { exec.WatchLearned(ctx, l.Dispatch); done <- struct{}{} }()
	peer := routePeer(b, peerPort, agentPort, n)
	stop = func() {
		peer.StopBgp(context.Background(), &api.StopBgpRequest{})
		cancel()
		for range 3 {
			<-done
		}
		exec.Close()
	}
	tor := func(annotations map[string]string) state.BGPPeer {
		return state.BGPPeer{Name: "tor", PeerIP: fmt.Sprintf("127.0.0.2:%d", peerPort), ASNumber: 65001, Annotations: annotations}
	}
	for _, a := range []state.Action{
		state.SourceSynced{Kind: state.KindBGPConfiguration, Configs: []state.BGPConfiguration{{Name: "default", ASNumber: 64512, ListenPort: agentPort}}},
		state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{{Name: "node-a", IPv4Address: "127.0.0.1/8"}}},
		state.SourceSynced{Kind: state.KindBGPPeer, Peers: []state.BGPPeer{tor(annotations)}},
		state.SourceSynced{Kind: state.KindBGPFilter}, state.SourceSynced{Kind: state.KindPod},
		state.SourceSynced{Kind: state.KindIPPool}, state.SourceSynced{Kind: state.KindBlockAffinity},
		state.RoutesListed{Dataplane: "none"},
	} {
		l.Dispatch(a)
	}
	return l, func(a map[string]string) { l.Dispatch(state.PeerUpserted{Peer: tor(a)}) }, stop
}

// routePeer is a GoBGP speaker on 127.0.0.2:port (AS 65001) peering with
// the agent on 127.0.0.1:agentPort and originating n /32s.
func routePeer(b testing.TB, port, agentPort int32, n int) *server.BgpServer {
	ctx := context.Background()
	bgpSrv := floorServer()
	must(b, bgpSrv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 65001, RouterId: "127.0.0.2",
		ListenPort: port, ListenAddresses: []string{"127.0.0.2"}}}))
	must(b, bgpSrv.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
		Conf:      &api.PeerConf{NeighborAddress: "127.0.0.1", PeerAsn: 64512},
		Transport: &api.Transport{LocalAddress: "127.0.0.2", RemotePort: uint32(agentPort)},
	}}))
	nh, err := bgp.NewPathAttributeNextHop(netip.MustParseAddr("127.0.0.2"))
	must(b, err)
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(0), nh}
	const batch = 1000
	for i := 0; i < n; i += batch {
		var paths []*apiutil.Path
		for j := i; j < min(i+batch, n); j++ {
			a := netip.AddrFrom4([4]byte{100, byte(64 + j>>16), byte(j >> 8), byte(j)})
			nlri, err := bgp.NewIPAddrPrefix(netip.PrefixFrom(a, 32))
			must(b, err)
			paths = append(paths, &apiutil.Path{Family: bgp.RF_IPv4_UC, Nlri: nlri, Attrs: attrs})
		}
		_, err := bgpSrv.AddPath(apiutil.AddPathRequest{Paths: paths})
		must(b, err)
	}
	return bgpSrv
}
