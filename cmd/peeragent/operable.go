package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/peeragent/peeragent/agent"
)

// operFlags are run's flags for what surrounds the agent: the metrics
// listener, the log format, the kubeconfig context and the speaker's gRPC
// API.
type operFlags struct {
	metricsAddr, logFormat, kubeContext, gobgpAPI string
	// httpMaxConns and metricsMaxConns cap the connections each HTTP
	// listener holds at a time (agent.Serve).
	httpMaxConns, metricsMaxConns int
	// reportStatus: in cluster mode, fill this node's CalicoNodeStatus and
	// emit Events on the objects problems name (watch/status).
	reportStatus bool
	// neighborSeries caps the neighbors with metric series of their own.
	neighborSeries int
	// level is the logger's level, set by runCmd (nil: run's caller made
	// the logger, and the level is not followed there).
	level *slog.LevelVar
}

func registerOperFlags(fs *flag.FlagSet, o *operFlags) {
	fs.StringVar(&o.logFormat, "log-format", "text", "log line format: text or json")
	fs.StringVar(&o.kubeContext, "context", "", "kubeconfig context (default: the kubeconfig's current context)")
	fs.StringVar(&o.gobgpAPI, "gobgp-api", "", "serve the embedded GoBGP's gRPC API on this loopback HOST:PORT, for the gobgp CLI of the same release (gobgp -p PORT neighbor); empty: off")
	fs.BoolVar(&o.reportStatus, "report-status", true, "in cluster mode: fill this node's CalicoNodeStatus objects and emit Events on the BGPPeer, BGPFilter or Secret a problem names; ignored with --from")
	fs.IntVar(&o.neighborSeries, "metrics-neighbor-series", agent.DefaultNeighborSeries, "most BGPPeer neighbors (not mesh peers; the first in address order) with peeragent_neighbor_* series of their own; peeragent_neighbor_series_omitted counts the others; 0: none")
	fs.StringVar(&o.metricsAddr, "metrics-addr", ":9189", "address of the Prometheus /metrics listener, apart from --http-addr so that an in-cluster Prometheus can scrape it (only /metrics); empty: none")
	fs.IntVar(&o.httpMaxConns, "http-max-conns", agent.DefaultMaxConns, "most connections --http-addr holds at a time; when full, the longest-idle one is closed for a new one (cut to leave 512 descriptors to BGP under a low open-files limit)")
	fs.IntVar(&o.metricsMaxConns, "metrics-max-conns", agent.DefaultMaxConns, "most connections --metrics-addr holds at a time, as --http-max-conns")
}

// maxListenerConns bounds --http-max-conns and --metrics-max-conns.
const maxListenerConns = 10_000

func checkMaxConns(o *operFlags) error {
	for _, f := range []struct {
		name string
		v    int
	}{{"--http-max-conns", o.httpMaxConns}, {"--metrics-max-conns", o.metricsMaxConns}} {
		if f.v < agent.MinMaxConns || f.v > maxListenerConns {
			return fmt.Errorf("%s %d: want %d to %d", f.name, f.v, agent.MinMaxConns, maxListenerConns)
		}
	}
	return nil
}

// metricsPart is the part of the agent that serves agent.MetricsHandler
// on addr, with at most maxConns connections (agent.Server: the same
// bounds as the loopback listener); an empty addr serves nothing (no
// part). The listener is opened before it returns, so a taken port is an
// error at start, not a log line.
func metricsPart(addr string, maxConns int, loop *agent.Loop) (*part, net.Addr, error) {
	if addr == "" {
		return nil, nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	srv, lln := agent.Server(ln, agent.MetricsHandler(loop), maxConns)
	return &part{name: "metrics listener " + addr, run: serving(srv, lln), forever: true}, ln.Addr(), nil
}

// serving runs srv on ln until ctx ends, when it closes it.
func serving(srv *http.Server, ln net.Listener) func(context.Context) error {
	return func(ctx context.Context) error {
		defer context.AfterFunc(ctx, func() { srv.Close() })()
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// seriesCap is --metrics-neighbor-series as agent.LoopConfig's NeighborSeries
// (where 0 means the default, and a negative number none).
func (o operFlags) seriesCap() int {
	if o.neighborSeries <= 0 {
		return -1
	}
	return o.neighborSeries
}

// flagLevel is --log-level as a level (Info if it does not parse: runCmd
// has refused it by then).
func (f *runFlags) flagLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(f.logLevel)); err != nil {
		return slog.LevelInfo
	}
	return l
}

// checkGoBGPAPI refuses a --gobgp-api address that is not on loopback:
// GoBGP's API has no authentication and can add peers and paths. It also
// tries the address, because GoBGP would only log that it cannot listen.
func checkGoBGPAPI(addr string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--gobgp-api %q: %w", addr, err)
	}
	if host != "localhost" {
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("--gobgp-api %q: not a loopback address (the API has no authentication)", addr)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--gobgp-api: %w", err)
	}
	return ln.Close()
}
