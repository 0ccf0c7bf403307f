package main

import (
	"log/slog"
	"syscall"

	"github.com/peeragent/peeragent/agent"
)

// raiseOpenFiles raises the open-files soft limit to the hard limit, so
// that the BGP listener, the neighbors' sockets and the admin endpoints
// run out of descriptors as late as the node allows (docs/semantics.md
// §7), and returns the soft limit in force (0: unknown). Go does this
// itself at start since 1.19; doing it here too says so in the log, and
// keeps it if that changes.
func raiseOpenFiles(log *slog.Logger) uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("open-files limit unreadable", "error", err)
		return 0
	}
	if lim.Cur < lim.Max {
		want := lim
		want.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			log.Warn("open-files limit not raised", "soft", lim.Cur, "hard", lim.Max, "error", err)
			return lim.Cur
		}
		lim = want
	}
	log.Info("open-files limit", "soft", lim.Cur, "hard", lim.Max)
	return lim.Cur
}

// fdReserve is how many descriptors the HTTP listeners' connection caps
// always leave to the rest of the agent: the BGP listener and a socket or
// two per neighbor, the cluster's watches, the dataplane's socket
// (docs/semantics.md §7: the admin endpoints never take what BGP needs).
const fdReserve = 512

// listenerCaps fits the caps of --http-max-conns and --metrics-max-conns
// (metrics 0: no metrics listener) under the open-files limit (0: unknown,
// caps kept), leaving fdReserve descriptors: caps that do not fit are cut
// in proportion, down to agent.MinMaxConns each, and shrunk says so.
func listenerCaps(limit uint64, httpMax, metricsMax int) (h, m int, shrunk bool) {
	total := uint64(httpMax + metricsMax)
	if limit == 0 || total+fdReserve <= limit {
		return httpMax, metricsMax, false
	}
	budget := uint64(0)
	if limit > fdReserve {
		budget = limit - fdReserve
	}
	h = max(agent.MinMaxConns, int(budget*uint64(httpMax)/total))
	if metricsMax > 0 {
		m = max(agent.MinMaxConns, int(budget*uint64(metricsMax)/total))
	}
	return h, m, true
}
