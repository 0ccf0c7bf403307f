package main

import (
	"log/slog"

	"github.com/peeragent/peeragent/internal/buildinfo"
	"github.com/peeragent/peeragent/watch/status"
)

// newStatusReporter is run's --report-status: the watch/status Reporter of
// cluster mode over the source's clients and resolved API group, writing
// Events through its own recorder; nil reports nothing (kc nil: --from,
// nothing to report to; or the flag off).
func newStatusReporter(f *runFlags, kc *kubeClients, log *slog.Logger) (*status.Reporter, error) {
	if kc == nil || !f.reportStatus {
		return nil, nil
	}
	return status.New(status.Config{Dynamic: kc.dyn, Events: kc.client.Events(), Group: kc.group, Node: f.node,
		Version: buildinfo.Read().Version, Log: log})
}
