package vpp

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/core"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/probe"
	"github.com/peeragent/peeragent/internal/testrig/wait"
	"github.com/peeragent/peeragent/state"
)

type noSpeaker struct{}

func (noSpeaker) Execute(context.Context, []effects.Effect) []state.Action { return nil }

type noSecrets struct{}

func (noSecrets) Watch(string)   {}
func (noSecrets) Unwatch(string) {}

// TestReadyzFollowsVPPConnection (docs/routes.md §9.7 rule 7): the agent's
// loop with a Dial-made executor over govpp's mock adapter, every source
// synced. /readyz is 503 while VPP is not there yet, 200 once it answers,
// 503 again while it is away (a crash: connections refused, pings
// unanswered), and 200 once it is back. /healthz stays 200 throughout.
func TestReadyzFollowsVPPConnection(t *testing.T) {
	core.HealthCheckProbeInterval = 20 * time.Millisecond
	minBackoff, maxBackoff, connectEvery = 10*time.Millisecond, 50*time.Millisecond, 10*time.Millisecond
	v := newRestartableVPP(t)
	v.setDown(true)
	log := slog.New(slog.DiscardHandler)
	e := dialWith(refusingAdapter{v.adapter, v}, "/run/vpp/api.sock", log)
	l := agent.NewLoop(agent.LoopConfig{Initial: state.New("node-a", state.Options{}), Speaker: noSpeaker{},
		Dataplane: e, Secrets: noSecrets{}, Log: log})
	ctx, cancel := context.WithCancel(context.Background())
	loopDone, runDone := make(chan struct{}), make(chan struct{})
	go func() { l.Run(ctx); close(loopDone) }()
	go func() { e.Run(ctx, l.Dispatch); close(runDone) }()
	t.Cleanup(func() { cancel(); <-loopDone; <-runDone })
	for _, k := range state.SyncedKinds {
		l.Dispatch(state.SourceSynced{Kind: k})
	}
	srv := httptest.NewServer(agent.Handler(l))
	defer srv.Close()

	waitReadyz(t, srv.URL, http.StatusServiceUnavailable, "dataplane down: not connected to VPP at /run/vpp/api.sock yet")
	v.setDown(false)
	waitReadyz(t, srv.URL, http.StatusOK, "ready")
	v.setDown(true)
	body := waitReadyz(t, srv.URL, http.StatusServiceUnavailable, "dataplane down: VPP at /run/vpp/api.sock")
	t.Logf("/readyz while VPP is away: %s", strings.TrimSpace(body))
	if code, b := httpGet(t, srv.URL+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while VPP is away = %d %q, want 200", code, b)
	}
	v.setDown(false)
	waitReadyz(t, srv.URL, http.StatusOK, "ready")
}

func waitReadyz(t *testing.T, url string, code int, want string) string {
	t.Helper()
	var gotCode int
	var body string
	wait.Until(t, "/readyz "+want, 20*time.Second, func() bool {
		gotCode, body = httpGet(t, url+"/readyz")
		return gotCode == code && strings.Contains(body, want)
	})
	return body
}

func httpGet(t *testing.T, url string) (int, string) { return probe.Get(t, url) }
