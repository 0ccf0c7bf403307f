package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/effects/gobgp"
	"github.com/peeragent/peeragent/internal/testrig/bird"
	"github.com/peeragent/peeragent/internal/testrig/frr"
	"github.com/peeragent/peeragent/internal/testrig/logbuf"
	"github.com/peeragent/peeragent/state"
	"github.com/peeragent/peeragent/watch"
)

// Communities on the wire (docs/routes.md §8.5, appendix A scenario 17),
// end to end from each source: a BGPConfiguration's communities and
// prefixAdvertisements, read from a manifest directory or from the real
// API server, reach BIRD 2 and FRR as a standard and a large community on
// node-a's block and on a borrowed /32 (a pod address of node-a outside
// its block, §8.1 rule 3); removing the entry takes them off both, on the
// same sessions (no reset). The agent is the real Loop and GoBGP executor
// on 127.0.0.1; BIRD is on 127.0.0.70, FRR on 127.0.0.71.

const (
	commOurAddr   = "127.0.0.1"
	commBirdAddr  = "127.0.0.70"
	commFRRAddr   = "127.0.0.71"
	commOurAS     = 64512
	commBirdAS    = 65070
	commFRRAS     = 65071
	commProto     = "peeragent" // BIRD's protocol name for the session with us
	commBlock     = "10.244.1.0/26"
	commBorrowed  = "10.244.9.5"
	commStdText   = "65000:100"
	commLargeText = "65000:0:7"
	commWait      = 45 * time.Second
)

// commPeers are BIRD and FRR, configured to peer with node-a.
type commPeers struct {
	bird              *bird.Bird
	frr               *frr.FRR
	ourPort           int
	birdPort, frrPort int
}

func startCommPeers(t *testing.T) *commPeers {
	bird.Require(t)
	frr.Require(t)
	noflapRequireAddrs(t, commOurAddr, commBirdAddr, commFRRAddr)
	ours, b, f := netip.MustParseAddr(commOurAddr), netip.MustParseAddr(commBirdAddr), netip.MustParseAddr(commFRRAddr)
	p := &commPeers{ourPort: freePort(t, commOurAddr), birdPort: bird.FreePort(t, b), frrPort: frr.FreePort(t, f)}
	p.bird = bird.Start(t, bird.Config{Address: b, Port: p.birdPort, AS: commBirdAS,
		Neighbors: []bird.Neighbor{{Name: commProto, Address: ours, Port: p.ourPort, AS: commOurAS}}})
	p.frr = frr.Start(t, frr.Config{Address: f, Port: p.frrPort, AS: commFRRAS,
		Neighbors: []frr.Neighbor{{Name: "peeragent", Address: ours, Port: p.ourPort, AS: commOurAS}}})
	return p
}

// source is what feeds the loop: the manifest directory or the cluster.
type commSource interface {
	Run(ctx context.Context, dispatch func(state.Action)) error
	agent.SecretWatcher
}

// startCommAgent runs the Loop and the real GoBGP executor on src until the
// test ends.
func startCommAgent(t *testing.T, src commSource, svcs agent.ServiceWatcher) *agent.Loop {
	logs := &logbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	bgp := gobgp.New(gobgp.Options{ListenAddresses: []string{commOurAddr}, Logger: log, GoBGPLevel: slog.LevelWarn})
	l := agent.NewLoop(agent.LoopConfig{Initial: state.New("node-a", state.Options{}), Speaker: bgp, Secrets: src,
		Services: svcs, Log: log, Journal: 1000})
	ctx, stop := context.WithCancel(context.Background())
	loopDone, srcDone, sessDone := make(chan struct{}), make(chan error, 1), make(chan error, 1)
	go func() { l.Run(ctx); close(loopDone) }()
	go func() { srcDone <- src.Run(ctx, l.Dispatch) }()
	go func() { sessDone <- bgp.WatchSessions(ctx, l.Dispatch) }()
	t.Cleanup(func() { // before the peers' cleanups: registered after them
		stop()
		<-loopDone
		if err := <-srcDone; err != nil && ctx.Err() == nil {
			t.Errorf("source: %v", err)
		}
		if err := <-sessDone; err != nil {
			t.Errorf("WatchSessions: %v", err)
		}
		if err := bgp.Close(); err != nil {
			t.Errorf("close the GoBGP executor: %v", err)
		}
		if t.Failed() {
			t.Logf("agent log:\n%s\nproblems: %v", logs.String(), l.State().AllProblems())
		}
	})
	return l
}

// commRoute is what a peer shows of one of our prefixes: its standard and
// large communities ("" when none), and whether it has the route at all.
type commRoute struct {
	have       bool
	std, large string
}

func (p *commPeers) birdRoute(t *testing.T, prefix string) commRoute {
	r, _ := birdComm(p.bird, prefix)
	return r
}

// birdComm is what BIRD b shows of its route to prefix (and the whole of
// show route PREFIX all): whether it has one, and its communities.
func birdComm(b *bird.Bird, prefix string) (commRoute, string) {
	out, err := b.Exec("show", "route", prefix, "all")
	if err != nil || !strings.Contains(out, strings.TrimSuffix(prefix, "/32")) {
		return commRoute{}, out
	}
	r := commRoute{have: true}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "BGP.community: "); ok {
			r.std = v
		}
		if v, ok := strings.CutPrefix(line, "BGP.large_community: "); ok {
			r.large = v
		}
	}
	return r, out
}

func (p *commPeers) frrRoute(t *testing.T, prefix string) commRoute {
	r, _, err := p.frr.Route(netip.MustParsePrefix(prefix))
	if err != nil || r.Prefix != prefix || len(r.Paths) == 0 {
		return commRoute{}
	}
	return commRoute{have: true, std: r.Paths[0].Community.String, large: r.Paths[0].LargeCommunity.String}
}

// waitRoutes waits until both peers show both prefixes with (or without)
// the two communities.
func (p *commPeers) waitRoutes(t *testing.T, with bool) {
	t.Helper()
	wantBird, wantFRR := commRoute{have: true}, commRoute{have: true}
	if with {
		wantBird = commRoute{have: true, std: "(65000,100)", large: "(65000, 0, 7)"}
		wantFRR = commRoute{have: true, std: commStdText, large: commLargeText}
	}
	var got string
	deadline := time.Now().Add(commWait)
	for {
		ok := true
		got = ""
		for _, prefix := range []string{commBlock, commBorrowed + "/32"} {
			b, f := p.birdRoute(t, prefix), p.frrRoute(t, prefix)
			got += fmt.Sprintf("\n  %s: BIRD %+v, FRR %+v", prefix, b, f)
			ok = ok && b == wantBird && f == wantFRR
		}
		if ok {
			t.Logf("with communities %v:%s", with, got)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the peers show:%s\nwant BIRD %+v, FRR %+v", commWait, got, wantBird, wantFRR)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sessions is what says a session is the one it was: BIRD's protocol
// state and establishment count, FRR's connection counters.
type commSessions struct {
	birdState      bird.ProtocolState
	birdEstablish  int
	frrEstablished int
	frrDropped     int
}

func (p *commPeers) sessions(t *testing.T) commSessions {
	t.Helper()
	bs, err := p.bird.Protocol(commProto)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := p.frr.Neighbor(netip.MustParseAddr(commOurAddr))
	if err != nil {
		t.Fatal(err)
	}
	if !bs.Established() || fn.State != "Established" {
		t.Fatalf("not established: BIRD %s, FRR %s", bs, fn.State)
	}
	return commSessions{birdState: bs, birdEstablish: p.bird.Establishments(commProto),
		frrEstablished: fn.ConnectionsEstablished, frrDropped: fn.ConnectionsDropped}
}

// checkCommunities is the test proper, whichever the source: apply(true)
// writes the BGPConfiguration with the prefixAdvertisements entry,
// apply(false) without it.
func (p *commPeers) checkCommunities(t *testing.T, apply func(with bool)) {
	p.waitRoutes(t, true)
	before := p.sessions(t)
	apply(false)
	p.waitRoutes(t, false)
	after := p.sessions(t)
	if !after.birdState.SameSessionAs(before.birdState) || after.birdEstablish != before.birdEstablish {
		t.Errorf("BIRD's session changed: before %s (%d establishments), after %s (%d)",
			before.birdState, before.birdEstablish, after.birdState, after.birdEstablish)
	}
	if after.frrEstablished != before.frrEstablished || after.frrDropped != before.frrDropped {
		t.Errorf("FRR's session changed: connections established %d→%d, dropped %d→%d",
			before.frrEstablished, after.frrEstablished, before.frrDropped, after.frrDropped)
	}
	apply(true)
	p.waitRoutes(t, true)
}

var commManifestNodes = nodeYAML("node-a", `projectcalico.org/IPv4Address: 127.0.0.1/8`)

func commManifestConfig(group string, port int, with bool) string {
	s := fmt.Sprintf(`apiVersion: %s
kind: BGPConfiguration
metadata: {name: default}
spec:
  nodeToNodeMeshEnabled: false
  listenPort: %d
  communities:
  - {name: rack, value: '%s'}
`, group, port, commLargeText)
	if with {
		s += fmt.Sprintf("  prefixAdvertisements:\n  - {cidr: 10.244.0.0/16, communities: ['%s', rack]}\n", commStdText)
	}
	return s
}

// manifestObjects are the peers, the pool, node-a's block and its
// borrowing pod, Calico objects in group (deleted is written as each
// group holds it).
func (p *commPeers) manifestObjects(group string) string {
	deleted := `"false"`
	if group == watch.GroupV3 {
		deleted = "false"
	}
	return fmt.Sprintf(`apiVersion: %[1]s
kind: BGPPeer
metadata: {name: bird}
spec: {node: node-a, peerIP: '%[2]s:%[3]d', asNumber: %[4]d}
---
apiVersion: %[1]s
kind: BGPPeer
metadata: {name: frr}
spec: {node: node-a, peerIP: '%[5]s:%[6]d', asNumber: %[7]d}
---
apiVersion: %[1]s
kind: IPPool
metadata: {name: pool}
spec: {cidr: 10.244.0.0/16, ipipMode: Never, vxlanMode: Never}
---
apiVersion: %[1]s
kind: BlockAffinity
metadata: {name: node-a-10-244-1-0-26}
spec: {node: node-a, cidr: %[8]s, state: confirmed, deleted: %[9]s}
---
%[10]s`, group, commBirdAddr, p.birdPort, commBirdAS, commFRRAddr, p.frrPort, commFRRAS, commBlock, deleted, commManifestPod)
}

const commManifestPod = `apiVersion: v1
kind: Pod
metadata: {name: borrower, namespace: default}
spec: {nodeName: node-a, containers: [{name: c, image: x}]}
status: {phase: Running, podIP: ` + commBorrowed + `, podIPs: [{ip: ` + commBorrowed + `}]}
`

func TestCommunitiesOnTheWireFromManifests(t *testing.T) {
	p := startCommPeers(t)
	dir := t.TempDir()
	writeFile(t, dir, "nodes.yaml", commManifestNodes)
	writeFile(t, dir, "objects.yaml", p.manifestObjects(watch.GroupCRD))
	writeFile(t, dir, "bgp.yaml", commManifestConfig(watch.GroupCRD, p.ourPort, true))
	d := watch.NewDir(dir, nil)
	d.Node, d.Interval = "node-a", 100*time.Millisecond
	startCommAgent(t, d, nil)
	p.checkCommunities(t, func(with bool) { writeFile(t, dir, "bgp.yaml", commManifestConfig(watch.GroupCRD, p.ourPort, with)) })
}

// TestCommunitiesOnTheWireFromAPIServer: the same objects, in each API
// group, created in the real API server (the Pod's addresses through its
// status), read by the agent's Kubernetes source.
func TestCommunitiesOnTheWireFromAPIServer(t *testing.T) {
	for _, tc := range []struct{ group, crds string }{{watch.GroupCRD, clusterCRDs}, {watch.GroupV3, clusterCRDsV3}} {
		t.Run(tc.group, func(t *testing.T) {
			e := clusterStart(t, 120*time.Second, nil, tc.crds)
			p := startCommPeers(t)
			dir := t.TempDir()
			apply := func(name, body string) {
				writeFile(t, dir, name, body)
				objs := e.manifests(filepath.Join(dir, name))
				for _, o := range objs {
					if o.GetKind() == "Pod" {
						e.putPodWithStatus(o)
						continue
					}
					e.applyObjects(o)
				}
			}
			apply("nodes.yaml", commManifestNodes)
			apply("objects.yaml", p.manifestObjects(tc.group))
			apply("bgp.yaml", commManifestConfig(tc.group, p.ourPort, true))
			e.startAgent(clusterAgentConfig{group: tc.group, realBGP: true})
			p.checkCommunities(t, func(with bool) { apply("bgp.yaml", commManifestConfig(tc.group, p.ourPort, with)) })
		})
	}
}

// putPodWithStatus creates a Pod, then writes its status (which a create
// ignores): what a kubelet would report.
func (e *clusterEnv) putPodWithStatus(o *unstructured.Unstructured) {
	e.t.Helper()
	var pod corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &pod); err != nil {
		e.t.Fatal(err)
	}
	status := pod.Status
	// No controller manager here makes the namespace's default
	// ServiceAccount, which the admission of a Pod looks up.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: pod.Namespace}}
	if _, err := e.cs.CoreV1().ServiceAccounts(pod.Namespace).Create(e.ctx, sa, metav1.CreateOptions{}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		e.t.Fatalf("create ServiceAccount %s/default: %v", pod.Namespace, err)
	}
	created, err := e.cs.CoreV1().Pods(pod.Namespace).Create(e.ctx, &pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create Pod %s: %v", pod.Name, err)
	}
	created.Status = status
	if _, err := e.cs.CoreV1().Pods(pod.Namespace).UpdateStatus(e.ctx, created, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("Pod %s status: %v", pod.Name, err)
	}
}
