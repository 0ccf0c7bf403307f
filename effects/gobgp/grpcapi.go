package gobgp

import (
	"log/slog"

	"github.com/osrg/gobgp/v4/pkg/server"
)

// serverOptions are those of each new BgpServer: GoBGP's logs through the
// executor's scrubbing handler and, with Options.GRPCAddress, GoBGP's gRPC
// API.
//
// The API is GoBGP's own (server.GrpcListenAddress): each BgpServer serves
// it from its creation, so with a new server per start the API address is
// served by the current speaker, and stopGRPC closes it with the server
// it belongs to. GoBGP only logs a failure to listen on it; the caller
// checks the address beforehand (cmd/peeragent --gobgp-api). Writing
// through the API behind the executor's back (adding a peer or a policy)
// breaks the executor's records: it is for reading, as `gobgp neighbor`.
func (e *Executor) serverOptions() []server.ServerOption {
	opts := []server.ServerOption{server.LoggerOption(e.gobgpLogger(e.epoch), e.level)}
	if e.grpc != "" {
		opts = append(opts, server.GrpcListenAddress(e.grpc))
	}
	return opts
}

// stopGRPC releases what StopBgp leaves of a stopped server: its gRPC API
// (the next server could not listen) and its BFD loop, a goroutine that
// holds the whole BgpServer (its tables, its neighbors' Adj-RIB-In) for
// good: without this, every server start leaked one (measured: +310 MB of
// test heap per round of the pair tests). BgpServer.Stop is GoBGP's only
// way to both, and it calls StopBgp again, which fails ("not running") and
// logs that at Error: GoBGP's level is raised above Error for the call,
// unless SetGoBGPLevel changed it meanwhile.
func (e *Executor) stopGRPC(bgp *server.BgpServer) {
	if bgp == nil {
		return
	}
	const quiet = slog.LevelError + 1
	prev := e.level.Level()
	e.level.Set(quiet)
	bgp.Stop()
	if e.level.Level() == quiet {
		e.level.Set(prev)
	}
}
