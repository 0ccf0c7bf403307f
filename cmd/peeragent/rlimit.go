package main

import (
	"log/slog"
	"syscall"
)

// raiseOpenFiles raises the open-files soft limit to the hard limit, so
// that the BGP listener, the neighbors' sockets and the admin endpoints
// run out of descriptors as late as the node allows (docs/semantics.md
// §7). Go does this itself at start since 1.19; doing it here too says so
// in the log, and keeps it if that changes.
func raiseOpenFiles(log *slog.Logger) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("open-files limit unreadable", "error", err)
		return
	}
	if lim.Cur < lim.Max {
		want := lim
		want.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			log.Warn("open-files limit not raised", "soft", lim.Cur, "hard", lim.Max, "error", err)
			return
		}
		lim = want
	}
	log.Info("open-files limit", "soft", lim.Cur, "hard", lim.Max)
}
