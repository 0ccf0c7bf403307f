package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/internal/testrig/probe"
	"github.com/peeragent/peeragent/state"
)

func TestRunFlagsMetricsAddrDefault(t *testing.T) {
	f, err := parseRunFlags([]string{"--node", "n"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.metricsAddr != ":9189" || f.httpAddr != "127.0.0.1:9179" {
		t.Errorf("metrics %q, http %q", f.metricsAddr, f.httpAddr)
	}
}

func TestServeMetricsServesOnlyMetrics(t *testing.T) {
	loop := agent.NewLoop(agent.LoopConfig{Initial: state.New("n", state.Options{}),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	p, addr, err := metricsPart("127.0.0.1:0", agent.DefaultMaxConns, loop)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the metrics listener ended with %v, want nil once stopped", err)
		}
	}()
	code, body := httpGet(t, "http://"+addr.String()+"/metrics")
	if code != http.StatusOK || !strings.Contains(body, "peeragent_build_info{") || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics: %d\n%.500s", code, body)
	}
	if code, _ := httpGet(t, "http://"+addr.String()+"/state"); code != http.StatusNotFound {
		t.Errorf("/state on the metrics address: %d, want 404", code)
	}
	if p, a, err := metricsPart("", agent.DefaultMaxConns, loop); p != nil || a != nil || err != nil {
		t.Errorf("empty address: %v, %v, %v", p, a, err)
	}
}

func httpGet(t *testing.T, url string) (int, string) { return probe.Get(t, url) }
