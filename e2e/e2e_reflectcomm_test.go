package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/watch"
)

// Communities on re-exported learned routes (docs/routes.md §8.3 rule 3),
// end to end in the reflector topology of TestReflectorReExportsServiceRoutes:
// node-a (the agent) reflects node-b's Local-policy service /32 to node-c
// and re-exports it to the eBGP ToR. With prefixAdvertisements
// [{cidr: 198.51.100.0/24, communities: [65000:100, 65000:0:7]}] both
// show the standard and the large community on the route node-b sent
// without any; new values replace them, and without the entry both show
// none, all on the same sessions.

// waitComm waits until node-c and the ToR both show the service /32 with
// want's communities.
func (p *reflPeers) waitComm(t *testing.T, want commRoute) {
	t.Helper()
	deadline := time.Now().Add(reflWait)
	for {
		c, cOut := birdComm(p.c, reflService)
		tor, torOut := birdComm(p.tor, reflService)
		if c == want && tor == want {
			t.Logf("node-c and the ToR show %+v", want)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v want %+v at node-c and the ToR; node-c %+v, ToR %+v\nnode-c:\n%s\nToR:\n%s",
				reflWait, want, c, tor, cOut, torOut)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestReflectorReExportCarriesCommunities(t *testing.T) {
	p := startReflPeers(t)
	dir := t.TempDir()
	nodes, objects, config := p.manifests(true)
	withComm := func(values string) string {
		return config + "  prefixAdvertisements: [{cidr: 198.51.100.0/24, communities: [" + values + "]}]\n"
	}
	writeFile(t, dir, "nodes.yaml", nodes)
	writeFile(t, dir, "objects.yaml", objects)
	writeFile(t, dir, "bgp.yaml", withComm("'65000:100', '65000:0:7'"))
	d := watch.NewDir(dir, nil)
	d.Node, d.Interval = "node-a", 100*time.Millisecond
	l := startCommAgent(t, d, nil)
	before := p.established(t)
	p.waitComm(t, commRoute{have: true, std: "(65000,100)", large: "(65000, 0, 7)"})
	// node-b sent it without any: node-a added them.
	if r, out := birdComm(p.b, reflService); !r.have || r.std != "" || r.large != "" {
		t.Errorf("node-b's own route: %+v, want no communities:\n%s", r, out)
	}
	if _, out := birdComm(p.c, reflService); !strings.Contains(out, "BGP.originator_id: "+reflBAddr) {
		t.Errorf("node-c's route is not reflected from node-b:\n%s", out)
	}

	writeFile(t, dir, "bgp.yaml", withComm("'65000:200', '65000:0:8'"))
	p.waitComm(t, commRoute{have: true, std: "(65000,200)", large: "(65000, 0, 8)"})

	writeFile(t, dir, "bgp.yaml", config)
	p.waitComm(t, commRoute{have: true})
	p.checkSteady(t, l, before)
}
