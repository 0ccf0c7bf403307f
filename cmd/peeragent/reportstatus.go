package main

import (
	"context"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/peeragent/peeragent/internal/buildinfo"
	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/watch/status"
)

// statusReporter is run's --report-status: a watch/status Reporter and the
// Event broadcaster behind its recorder; nil reports nothing (--from, or
// the flag off).
type statusReporter struct {
	r           *status.Reporter
	broadcaster record.EventBroadcaster
}

// newStatusReporter makes the reporter of cluster mode over the source's
// clients and resolved API group (kc nil: --from, nothing to report to).
func newStatusReporter(f *runFlags, kc *kubeClients, log *slog.Logger) (*statusReporter, error) {
	if kc == nil || !f.reportStatus {
		return nil, nil
	}
	return newStatusReporterFor(kc.client, kc.dyn, kc.group, f.node, 0, log)
}

// newStatusReporterFor is newStatusReporter over given clients; eventGap
// 0 is status.DefaultEventGap (tests shorten it).
func newStatusReporterFor(client kubernetes.Interface, dyn dynamic.Interface, group, node string, eventGap time.Duration, log *slog.Logger) (*statusReporter, error) {
	b := record.NewBroadcaster()
	rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "peeragent", Host: node})
	r, err := status.New(status.Config{Dynamic: dyn, Group: group, Node: node, Recorder: rec,
		Version: buildinfo.Read().Version, Log: log, EventGap: eventGap})
	if err != nil {
		b.Shutdown()
		return nil, err
	}
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return &statusReporter{r: r, broadcaster: b}, nil
}

// observe is a Published observer; it never blocks.
func (s *statusReporter) observe(st state.State) {
	if s != nil {
		s.r.Observe(st)
	}
}

// run reports until ctx ends, then flushes what the broadcaster holds.
func (s *statusReporter) run(ctx context.Context) {
	if s == nil {
		return
	}
	defer s.broadcaster.Shutdown()
	s.r.Run(ctx)
}
