package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/fakespeaker"
	"github.com/peeragent/peeragent/internal/testrig/wait"
	"github.com/peeragent/peeragent/state"
)

// statusSpeaker acks every peer effect and reports fixed speaker facts.
type statusSpeaker struct{}

func (statusSpeaker) Execute(_ context.Context, effs []effects.Effect) []state.Action {
	return fakespeaker.Ack(effs)
}

func (statusSpeaker) Inspect(_ context.Context, addr netip.Addr, advertised bool) ([]effects.NeighborInfo, error) {
	if addr.String() != "127.0.0.10" {
		return nil, nil
	}
	adv := uint64(7)
	return []effects.NeighborInfo{{Address: addr, State: "active", HoldTime: 90, KeepaliveInterval: 30,
		LocalCapabilities: []string{"route-refresh", "multi-protocol ipv4-unicast"}, Received: 3, Accepted: 2, Advertised: &adv}}, nil
}

func startStatusAgent(t *testing.T) string {
	t.Helper()
	loop := agent.NewLoop(agent.LoopConfig{Initial: state.New("node-a", state.Options{}), Speaker: statusSpeaker{},
		Dataplane: effects.NoDataplane{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { loop.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	srv := httptest.NewServer(agent.Handler(loop))
	t.Cleanup(srv.Close)
	for _, a := range []state.Action{
		state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{{Name: "node-a", IPv4Address: "127.0.0.1/8"}}},
		state.SourceSynced{Kind: state.KindBGPConfiguration, Configs: []state.BGPConfiguration{{Name: "default", NodeToNodeMeshEnabled: new(bool)}}},
		state.SourceSynced{Kind: state.KindBGPFilter},
		state.SourceSynced{Kind: state.KindBlockAffinity},
		state.SourceSynced{Kind: state.KindIPPool},
		state.SourceSynced{Kind: state.KindPod},
		state.SourceSynced{Kind: state.KindBGPPeer, Peers: []state.BGPPeer{{Name: "tor", PeerIP: "127.0.0.10", ASNumber: 65010, ReachableBy: "127.0.0.254"}}},
		state.RoutesListed{Dataplane: "none"},
	} {
		loop.Dispatch(a)
	}
	wait.Until(t, "the agent ready", 10*time.Second, loop.Ready)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestStatusForms(t *testing.T) {
	addr := startStatusAgent(t)
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Main(append([]string{"status", "--addr", addr}, args...), &out, &errb); code != 0 {
			t.Fatalf("status %q: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	var st Status
	if err := json.Unmarshal([]byte(run("-o", "json")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Neighbors) != 1 || st.Neighbors[0].Address != "127.0.0.10" || st.Neighbors[0].Origin != "bgppeer/tor" ||
		st.Neighbors[0].Phase != "configured" || st.Neighbors[0].Route != "skipped" || st.Problems == nil {
		t.Errorf("status -o json: %+v", st)
	}
	if n := st.Neighbors; len(n) != 1 || n[0].Advertised == nil || *n[0].Advertised != 7 || n[0].Received == nil || *n[0].Received != 3 {
		t.Errorf("status -o json lacks the speaker's advertised 7 and received 3: %+v", st.Neighbors)
	}
	table := run()
	for _, want := range []string{"own paths 0", "ADVERTISED  RECEIVED", "configured"} {
		if !strings.Contains(table, want) {
			t.Errorf("status lacks %q:\n%s", want, table)
		}
	}
	if f := strings.Fields(strings.Split(table, "\n")[3]); len(f) < 3 || f[len(f)-3] != "7" || f[len(f)-2] != "3" {
		t.Errorf("status row lacks advertised 7, received 3 before the password:\n%s", table)
	}
	text := run("127.0.0.10")
	for _, want := range []string{"neighbor 127.0.0.10: AS 65010", "hold 90s (negotiated -), keepalive 30s",
		"local: route-refresh, multi-protocol ipv4-unicast", "received 3, accepted 2, advertised 7", "phase         configured",
		"route         127.0.0.10/32 via 127.0.0.254, skipped"} {
		if !strings.Contains(text, want) {
			t.Errorf("status ADDRESS lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "gen=") {
		t.Errorf("generation in the text:\n%s", text)
	}
	var d neighborDetail
	if err := json.Unmarshal([]byte(run("127.0.0.10", "-o", "json")), &d); err != nil || d.Speaker == nil || d.Speaker.Received != 3 {
		t.Errorf("status ADDRESS -o json: %+v, %v", d, err)
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"status", "--addr", addr, "127.0.0.99"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no neighbor 127.0.0.99") {
		t.Errorf("unknown neighbor: exit %d, %s", code, errb.String())
	}
}
