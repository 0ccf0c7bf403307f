package e2e

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/internal/testrig/bird"
	"github.com/peeragent/peeragent/watch"
)

// Route reflection and re-export as Calico does it (docs/routes.md §8.3
// rules 7-8), end to end: the agent is node-a, a route reflector (the
// node's projectcalico.org/RouteReflectorClusterID annotation), on
// 127.0.0.190. Two iBGP BIRDs stand for other nodes: node-b (127.0.0.191)
// announces 198.51.100.5/32, its Local-policy service's load-balancer IP
// as Calico advertises it from a node with a local endpoint; node-c
// (127.0.0.192) is the other client. An eBGP BIRD is the ToR (127.0.0.193).
// With serviceLoadBalancerIPs [198.51.100.5/32] (a single address, so no
// range node-a advertises: only rule 7, the reflector's, lets it out) the
// /32 reaches node-c, reflected, and the ToR; when the entry is removed
// both lose it, on the same sessions (the soft reset out of rule 13).

const (
	reflOurAddr = "127.0.0.190"
	reflBAddr   = "127.0.0.191"
	reflCAddr   = "127.0.0.192"
	reflToRAddr = "127.0.0.193"
	reflAS      = 64512
	reflToRAS   = 65093
	reflService = "198.51.100.5/32"
	reflWait    = 45 * time.Second
)

type reflPeers struct {
	b, c, tor *bird.Bird
	ourPort   int
	ports     [3]int
}

func startReflPeers(t *testing.T) *reflPeers {
	bird.Require(t)
	noflapRequireAddrs(t, reflOurAddr, reflBAddr, reflCAddr, reflToRAddr)
	ours := netip.MustParseAddr(reflOurAddr)
	p := &reflPeers{ourPort: freePort(t, reflOurAddr)}
	start := func(i int, addr string, as uint32, announce []netip.Prefix) *bird.Bird {
		a := netip.MustParseAddr(addr)
		p.ports[i] = bird.FreePort(t, a)
		return bird.Start(t, bird.Config{Address: a, Port: p.ports[i], AS: as, Announce: announce,
			Neighbors: []bird.Neighbor{{Name: "peeragent", Address: ours, Port: p.ourPort, AS: reflAS}}})
	}
	p.b = start(0, reflBAddr, reflAS, []netip.Prefix{netip.MustParsePrefix(reflService)})
	p.c = start(1, reflCAddr, reflAS, nil)
	p.tor = start(2, reflToRAddr, reflToRAS, nil)
	return p
}

func (p *reflPeers) manifests(with bool) (nodes, objects, config string) {
	nodes = nodeYAML("node-a", "projectcalico.org/IPv4Address: "+reflOurAddr+"/8, projectcalico.org/RouteReflectorClusterID: 244.0.0.1")
	g := watch.GroupCRD
	objects = fmt.Sprintf(`apiVersion: %[1]s
kind: BGPPeer
metadata: {name: node-b}
spec: {node: node-a, peerIP: '%[2]s:%[3]d', asNumber: %[4]d}
---
apiVersion: %[1]s
kind: BGPPeer
metadata: {name: node-c}
spec: {node: node-a, peerIP: '%[5]s:%[6]d', asNumber: %[4]d}
---
apiVersion: %[1]s
kind: BGPPeer
metadata: {name: tor}
spec: {node: node-a, peerIP: '%[7]s:%[8]d', asNumber: %[9]d}
---
apiVersion: %[1]s
kind: IPPool
metadata: {name: pool}
spec: {cidr: 10.244.0.0/16, ipipMode: Never, vxlanMode: Never}
`, g, reflBAddr, p.ports[0], reflAS, reflCAddr, p.ports[1], reflToRAddr, p.ports[2], reflToRAS)
	config = fmt.Sprintf(`apiVersion: %s
kind: BGPConfiguration
metadata: {name: default}
spec:
  asNumber: %d
  nodeToNodeMeshEnabled: false
  listenPort: %d
  serviceClusterIPs: [{cidr: 10.96.0.0/12}]
`, g, reflAS, p.ourPort)
	if with {
		config += "  serviceLoadBalancerIPs: [{cidr: " + reflService + "}]\n"
	}
	return nodes, objects, config
}

// has says whether a BIRD shows the service /32, and from whom.
func reflHas(b *bird.Bird) (bool, string) {
	out, err := b.Exec("show", "route", reflService, "all")
	return err == nil && strings.Contains(out, strings.TrimSuffix(reflService, "/32")), out
}

// waitService waits until node-c and the ToR both show (or both lack) the
// service /32; node-b must show its own throughout.
func (p *reflPeers) waitService(t *testing.T, want bool) {
	t.Helper()
	deadline := time.Now().Add(reflWait)
	for {
		cHas, cOut := reflHas(p.c)
		torHas, torOut := reflHas(p.tor)
		if cHas == want && torHas == want {
			t.Logf("service /32 at node-c and the ToR: %v\nnode-c:\n%s\nToR:\n%s", want, cOut, torOut)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v want %s at node-c and the ToR: %v; node-c %v, ToR %v\nnode-c:\n%s\nToR:\n%s",
				reflWait, reflService, want, cHas, torHas, cOut, torOut)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (p *reflPeers) established(t *testing.T) [3]bird.ProtocolState {
	t.Helper()
	var out [3]bird.ProtocolState
	for i, b := range []*bird.Bird{p.b, p.c, p.tor} {
		deadline := time.Now().Add(reflWait)
		for {
			s, err := b.Protocol("peeragent")
			if err == nil && s.Established() {
				out[i] = s
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: session not established after %v: %v %v", b, reflWait, s, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return out
}

func TestReflectorReExportsServiceRoutes(t *testing.T) {
	p := startReflPeers(t)
	dir := t.TempDir()
	nodes, objects, config := p.manifests(true)
	writeFile(t, dir, "nodes.yaml", nodes)
	writeFile(t, dir, "objects.yaml", objects)
	writeFile(t, dir, "bgp.yaml", config)
	d := watch.NewDir(dir, nil)
	d.Node, d.Interval = "node-a", 100*time.Millisecond
	l := startCommAgent(t, d, nil)
	before := p.established(t)
	p.waitService(t, true)
	// The ToR's copy is node-a's eBGP re-export (AS path 64512).
	if _, out := reflHas(p.tor); !strings.Contains(out, "BGP.as_path: 64512") {
		t.Errorf("ToR's route is not from node-a's AS:\n%s", out)
	}
	if _, out := reflHas(p.c); !strings.Contains(out, "BGP.originator_id: "+reflBAddr) {
		t.Errorf("node-c's route is not reflected from node-b (no originator_id %s):\n%s", reflBAddr, out)
	}
	_, _, config = p.manifests(false)
	writeFile(t, dir, "bgp.yaml", config)
	p.waitService(t, false)
	p.checkSteady(t, l, before)
}

// checkSteady: the three sessions are those of before, and the agent has
// no problem.
func (p *reflPeers) checkSteady(t *testing.T, l *agent.Loop, before [3]bird.ProtocolState) {
	t.Helper()
	after := p.established(t)
	for i := range before {
		if !after[i].SameSessionAs(before[i]) {
			t.Errorf("session %d changed: %s -> %s", i, before[i], after[i])
		}
	}
	if probs := l.State().AllProblems(); len(probs) > 0 {
		t.Errorf("problems: %v", probs)
	}
}
