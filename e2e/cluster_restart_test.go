package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/peeragent/peeragent/internal/testrig/kube"
	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/watch"
)

// TestClusterAPIServerRestart: the real GoBGP executor, steady with two
// mesh neighbors and a BGPPeer with a password, while kube-apiserver is
// (1) restarted (kubetest Restart) and (2) stopped for clusterOutageOf,
// then started again. After each, changes made through the API server to
// every watched kind arrive, first through the reflectors' relists, then
// as watch events (the watches recovered); from before the disruption
// until then, the loop handed the executor no effect and started or
// stopped no Secret watch, and GoBGP's neighbors and the sessions'
// generations did not move. A password rotation afterwards is exactly one
// update.
//
// Each disruption gets an agent of its own: client-go's reflector backoff
// (0.8 s doubling to 30 s, jitter up to 100 %, reset after 2 min) grows
// with every relist, so a second outage for the same agent may take it a
// minute to notice the API server is back; that is client-go's default,
// not a bug, but it would make a bounded test flaky.
func TestClusterAPIServerRestart(t *testing.T) {
	// Without a watch termination grace period kube-apiserver waits for
	// open watches (ours) to end before it exits, up to its 60 s request
	// timeout, and kubetest kills it after 15 s: with one, it ends them on
	// SIGTERM, as a rolling restart of a real control plane does.
	e := clusterStart(t, 80*time.Second, []kube.Option{kube.WithAPIServerArgs("--shutdown-watch-termination-grace-period=2s")}, clusterCRDs)
	group := watch.GroupCRD
	port := freePort(t, clusterAddr)
	const pw1, pw2 = "cluster-restart-one", "cluster-restart-two"
	e.putNode(clusterNode, nil, map[string]string{watch.AnnotationIPv4: "127.0.0.1/8"})
	e.putNode("node-b", nil, map[string]string{watch.AnnotationIPv4: "127.0.0.2/8"})
	e.putNode("node-c", nil, map[string]string{watch.AnnotationIPv4: "127.0.0.3/8"})
	e.putCalico(group, "BGPConfiguration", "default", map[string]any{"listenPort": int64(port)})
	e.putCalico(group, "BGPPeer", "tor", map[string]any{"node": clusterNode, "peerIP": "127.0.0.10", "asNumber": int64(65010),
		"password": map[string]any{"secretKeyRef": map[string]any{"name": "tor-md5", "key": clusterKey}}})
	e.putSecret(clusterNS, "tor-md5", map[string]string{clusterKey: pw1})
	want := []clusterNbr{
		{addr: "127.0.0.2", asn: 64512, local: 64512, origin: "mesh"},
		{addr: "127.0.0.3", asn: 64512, local: 64512, origin: "mesh"},
		{addr: "127.0.0.10", asn: 65010, local: 64512, origin: "bgppeer/tor", pw: pw1},
	}

	// Changes nobody's neighbors depend on, one per watched kind, each
	// visible in the State's inputs once its watch delivers it.
	unrelated := func(round string) {
		t.Helper()
		e.editNode("node-c", func(n *corev1.Node) { n.Labels["round"] = round })
		e.putCalico(group, "BGPPeer", "elsewhere-"+round, map[string]any{"node": "node-b", "peerIP": "127.0.0.20", "asNumber": int64(65020)})
		e.putSecret(clusterNS, "tor-md5", map[string]string{clusterKey: pw1, "unused": round})
		e.putCalico(group, "BGPConfiguration", "node.node-c", map[string]any{"logSeverityScreen": "Debug" + round})
	}
	arrived := func(round string) func(state.State) bool {
		return func(s state.State) bool {
			_, peer := s.Inputs.Peers.Get("elsewhere-" + round)
			cfg, hasCfg := s.Inputs.Configs.Get("node.node-c")
			sec, hasSec := s.Inputs.Secrets.Get("tor-md5")
			if !peer || !hasCfg || !hasSec || clusterNodeLabel(s, "node-c", "round") != round {
				return false
			}
			unused, ok := sec.Data["unused"]
			return ok && unused.Fingerprint() == state.NewPassword(round).Fingerprint() &&
				cfg.LogSeverityScreen == "Debug"+round
		}
	}
	// checkRecovery makes the changes of round, then those of round+"b", and
	// checks that the agent did nothing since before.
	checkRecovery := func(a *clusterAgent, what, round string, began time.Time, before clusterSnapshot) {
		t.Helper()
		unrelated(round)
		a.waitState(what+": changes made after it arrive", arrived(round))
		arrivedAfter := time.Since(began)
		a.settle()
		relisted := a.snapshot()
		unrelated(round + "b")
		a.waitState(what+": later changes arrive as watch events", arrived(round+"b"))
		a.settle()
		after := a.snapshot()
		events := after.since(relisted)
		t.Logf("%s: the changes made after it arrived %v after it began; from before it until they did: %s; "+
			"the next changes arrived as: %s", what, arrivedAfter.Round(time.Millisecond), relisted.since(before), events)
		for _, k := range []string{"nodeUpserted", "peerUpserted", "configUpserted", "secretUpserted"} {
			if events.actions[k] == 0 {
				t.Errorf("%s: no %s after recovery: the %s watch is not live", what, k, strings.TrimSuffix(k, "Upserted"))
			}
		}
		if d := after.since(before); d.effects != 0 || d.watchCalls != 0 {
			t.Errorf("%s: the loop handed the executor %d effects %q and made %d secret watch calls %q",
				what, d.effects, a.speaker.strings(before.effects), d.watchCalls, a.watches.list()[before.watchCalls:])
		}
		a.same(what, before, want...)
	}

	// 1. Restart: kube-apiserver stopped and started again at once.
	a := e.startAgent(clusterAgentConfig{group: group, realBGP: true})
	a.initial("agent 1 steady before the restart", 64512, want...)
	before := a.snapshot()
	t0 := time.Now()
	if err := e.kc.Restart(); err != nil {
		t.Fatalf("restart kube-apiserver: %v", err)
	}
	t.Logf("restart: kube-apiserver stopped and ready again in %v", time.Since(t0).Round(time.Millisecond))
	checkRecovery(a, "restart", "1", t0, before)
	a.alive()
	a.stop()

	// 2. Unavailable for a while: the agent keeps its State and makes no
	// call while kube-apiserver is down.
	b := e.startAgent(clusterAgentConfig{group: group, realBGP: true})
	b.initial("agent 2 steady before the outage", 64512, want...)
	before = b.snapshot()
	t1 := time.Now()
	if err := e.kc.Stop(); err != nil {
		t.Fatalf("stop kube-apiserver: %v", err)
	}
	stopped := time.Since(t1)
	down, polls := time.Now(), 0
	for time.Since(down) < clusterOutageOf {
		b.alive()
		polls++
		if got := b.snapshot(); got.effects != before.effects || got.watchCalls != before.watchCalls || !b.loop.Ready() {
			t.Fatalf("while kube-apiserver is down: %s, ready %v", got.since(before), b.loop.Ready())
		}
		if got := clusterStateLines(b.loop.State()); !slices.Equal(got, clusterWantState(want)) {
			t.Fatalf("while kube-apiserver is down the neighbors changed: %q", got)
		}
		select {
		case <-e.ctx.Done():
			t.Fatal("out of time while kube-apiserver is down")
		case <-time.After(50 * time.Millisecond):
		}
	}
	downFor := time.Since(down)
	t2 := time.Now()
	if err := e.kc.Restart(); err != nil {
		t.Fatalf("start kube-apiserver again: %v", err)
	}
	t.Logf("outage: stopping took %v; down %v more, the State polled %d times: unchanged, ready, no effect; "+
		"starting took %v; the agent logged %d \"watch ended with error\" warnings", stopped.Round(time.Millisecond),
		downFor.Round(time.Millisecond), polls, time.Since(t2).Round(time.Millisecond),
		strings.Count(b.logs.String(), "watch ended with error"))
	checkRecovery(b, "outage", "2", t1, before)

	// Positive control: the watches are live for what matters too.
	want[2].pw = pw2
	effs := b.step("Secret tor-md5 rotated after the outage", func() {
		e.putSecret(clusterNS, "tor-md5", map[string]string{clusterKey: pw2, "unused": "2b"})
	}, 64512, want...)
	clusterExpect(t, "a rotation after the outage", effs, "update-peer 127.0.0.10")
	b.alive()
	t.Logf("whole test %v", time.Since(e.started).Round(time.Millisecond))
}
