//go:build linux

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	birdtest "github.com/peeragent/peeragent/internal/testrig/bird"
	"github.com/peeragent/peeragent/watch"
)

// The plain-Calico rig (README.md, "Plain Calico"): deploy/calico rendered
// with kustomize's library, its RBAC applied to a real kube-apiserver, and
// two agents run in network namespaces of the test's own with exactly the
// DaemonSet's arguments (plus --kubeconfig: they authenticate as the
// overlay's ServiceAccount, through a forwarder the test runs inside each
// namespace to the API server on the host's 127.0.0.1). The cluster is
// Calico-shaped: Nodes with calico-node's projectcalico.org/IPv4Address
// annotation, an unencapsulated IPPool, one BlockAffinity per node, the
// default BGPConfiguration (AS 64512, the node-to-node mesh) and a global
// BGPPeer, a BIRD ToR in a third namespace, whose TCP-MD5 password is a
// Secret in the overlay's secrets namespace (kube-system).

const (
	calToR      = "192.168.77.254"
	calToRAS    = 65000
	calToRNet   = "10.99.0.0/24" // what the ToR announces
	calSecret   = "bgp-passwords"
	calKey      = "tor"
	calPassword = "calico-e2e-md5"
)

// TestCalicoOverlayEndToEnd: the two agents exchange their blocks with each
// other (the mesh) and with BIRD, install the routes in their kernels'
// main tables (protocol 201) with a drop route for their own block, learn
// the ToR's prefix, and carry an ICMP echo between pod addresses of the two
// nodes. No problem is reported: the Secret is read by name in kube-system.
func TestCalicoOverlayEndToEnd(t *testing.T) {
	requireNetns(t)
	birdtest.Require(t)
	e := clusterStart(t, 4*time.Minute, nil, clusterCRDs)
	ds, rbac := calicoOverlay(t)
	e.applyObjects(e.manifests(filepath.Join(clusterDeploy, "base", "serviceaccount.yaml"))...)
	e.applyObjects(rbac...)
	secretsNS := calicoArg(t, ds, "secrets-namespace")

	// The network: A and B (the nodes) and T (the ToR) on one bridge in T.
	suffix := nsSuffix()
	nsA, nsB, nsT := newNS(t, e.ctx, "peeragent-c-a-"+suffix), newNS(t, e.ctx, "peeragent-c-b-"+suffix), newNS(t, e.ctx, "peeragent-c-t-"+suffix)
	ipCmd(t, e.ctx, "-n", nsT, "link", "add", "br0", "type", "bridge")
	ipCmd(t, e.ctx, "-n", nsT, "addr", "add", calToR+"/24", "dev", "br0")
	ipCmd(t, e.ctx, "-n", nsT, "link", "set", "br0", "up")
	for _, s := range []struct{ ns, dev, tdev, addr, pod string }{
		{nsA, "ca0", "ta0", pingAddrA, pingPodA},
		{nsB, "cb0", "tb0", pingAddrB, pingPodB},
	} {
		ipCmd(t, e.ctx, "-n", nsT, "link", "add", s.tdev, "type", "veth", "peer", "name", s.dev, "netns", s.ns)
		ipCmd(t, e.ctx, "-n", nsT, "link", "set", s.tdev, "master", "br0")
		ipCmd(t, e.ctx, "-n", nsT, "link", "set", s.tdev, "up")
		ipCmd(t, e.ctx, "-n", s.ns, "addr", "add", s.pod+"/32", "dev", "lo")
		ipCmd(t, e.ctx, "-n", s.ns, "addr", "add", s.addr+"/24", "dev", s.dev)
		ipCmd(t, e.ctx, "-n", s.ns, "link", "set", s.dev, "up")
	}

	// The cluster, as calico-node and calicoctl leave it.
	group := watch.GroupCRD
	e.putNode("node-a", nil, map[string]string{watch.AnnotationIPv4: pingAddrA + "/24"})
	e.putNode("node-b", nil, map[string]string{watch.AnnotationIPv4: pingAddrB + "/24"})
	e.putCalico(group, "IPPool", "default-ipv4-ippool", map[string]any{"cidr": "10.244.0.0/16",
		"ipipMode": "Never", "vxlanMode": "Never", "blockSize": int64(26), "natOutgoing": true})
	e.putCalico(group, "BlockAffinity", "node-a-10-244-1-0-26", map[string]any{"node": "node-a", "cidr": pingBlkA,
		"state": "confirmed", "deleted": "false"})
	e.putCalico(group, "BlockAffinity", "node-b-10-244-2-0-26", map[string]any{"node": "node-b", "cidr": pingBlkB,
		"state": "confirmed", "deleted": "false"})
	e.putCalico(group, "BGPConfiguration", "default", map[string]any{"asNumber": int64(64512), "nodeToNodeMeshEnabled": true})
	e.putSecret(secretsNS, calSecret, map[string]string{calKey: calPassword})
	e.putCalico(group, "BGPPeer", "tor", map[string]any{"peerIP": calToR, "asNumber": int64(calToRAS),
		"password": map[string]any{"secretKeyRef": map[string]any{"name": calSecret, "key": calKey}}})
	// What `calicoctl node status` cannot show without BIRD: the agent
	// fills this node's CalicoNodeStatus (--report-status, on by default).
	e.putCalico(group, "CalicoNodeStatus", "node-a", map[string]any{"node": "node-a",
		"classes": []any{"Agent", "BGP"}, "updatePeriodSeconds": int64(1)})

	tor := birdtest.Start(t, birdtest.Config{Netns: nsT, Address: netip.MustParseAddr(calToR), Port: 179, AS: calToRAS,
		Announce: []netip.Prefix{netip.MustParsePrefix(calToRNet)},
		Neighbors: []birdtest.Neighbor{
			{Name: "node_a", Address: netip.MustParseAddr(pingAddrA), Port: 179, AS: 64512, Password: calPassword},
			{Name: "node_b", Address: netip.MustParseAddr(pingAddrB), Port: 179, AS: 64512, Password: calPassword},
		}})

	sa := e.kc.ConfigFor(clusterAgentNS, clusterSA)
	bin := buildAgent(t)
	a := startCalicoAgent(t, e, bin, ds, sa, nsA, "node-a")
	b := startCalicoAgent(t, e, bin, ds, sa, nsB, "node-b")

	a.waitRoutes(t, e.ctx, pingAddrB, pingBlkB, pingBlkA)
	b.waitRoutes(t, e.ctx, pingAddrA, pingBlkA, pingBlkB)
	for _, name := range []string{"node_a", "node_b"} {
		if _, err := tor.WaitEstablished(e.ctx, name); err != nil {
			t.Fatalf("BIRD's session %s: %v", name, err)
		}
	}
	for _, n := range []*nsAgent{a, b} {
		calWaitLearned(t, e.ctx, n, calToRNet, calToR)
	}
	for _, blk := range []string{pingBlkA, pingBlkB} {
		out := clusterBirdRouteIn(t, e.ctx, tor, blk)
		t.Logf("BIRD (the ToR) has %s:\n%s", blk, out)
	}
	for _, ns := range []string{nsA, nsB} {
		out, _ := exec.Command("ip", "-n", ns, "route", "show", "proto", "201").CombinedOutput()
		t.Logf("ip -n %s route show proto 201:\n%s", ns, out)
	}
	var bgp string
	if _, ok := e.waitNodeStatus(group, "node-a", 60*time.Second, func(status map[string]any) bool {
		out, _ := yaml.Marshal(status)
		bgp = string(out)
		return strings.Contains(bgp, "numberEstablishedV4: 2") && strings.Contains(bgp, "peerIP: "+calToR)
	}); !ok {
		t.Fatalf("CalicoNodeStatus node-a: no 2 established IPv4 peers with the ToR:\n%s", bgp)
	}
	t.Logf("kubectl get caliconodestatus node-a -o yaml (status):\n%s", bgp)
	pinger := newPinger(t, nsA, pingPodA)
	if ok, err := pinger.echo(e.ctx, pingPodB, 1, 2*time.Second); !ok {
		t.Fatalf("echo %s -> %s: no reply with the routes installed: %v", pingPodA, pingPodB, err)
	}
	t.Logf("echo %s -> %s: reply", pingPodA, pingPodB)
	for _, n := range []*nsAgent{a, b} {
		out, err := exec.Command("ip", "netns", "exec", n.ns, bin, "status").CombinedOutput()
		if err != nil {
			t.Errorf("%s: peeragent status: %v\n%s", n.node, err, out)
		}
		if !bytes.Contains(out, []byte(calToR)) || bytes.Contains(out, []byte(calPassword)) || !bytes.Contains(out, []byte("problems (0)")) {
			t.Errorf("%s: peeragent status without the ToR, with its password, or with problems:\n%s", n.node, out)
		}
		t.Logf("%s: peeragent status:\n%s", n.node, out)
	}
}

// calicoOverlay renders deploy/calico and returns its DaemonSet and its
// RBAC objects.
func calicoOverlay(t *testing.T) (*appsv1.DaemonSet, []*unstructured.Unstructured) {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(clusterDeploy, "calico"))
	if err != nil {
		t.Fatalf("kustomize build deploy/calico: %v", err)
	}
	var ds *appsv1.DaemonSet
	var rbac []*unstructured.Unstructured
	for _, r := range res.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		switch u.GetKind() {
		case "DaemonSet":
			ds = &appsv1.DaemonSet{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, ds); err != nil {
				t.Fatal(err)
			}
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			rbac = append(rbac, u)
		}
	}
	if ds == nil || len(rbac) != 4 {
		t.Fatalf("deploy/calico: DaemonSet %v, %d RBAC objects, want one and 4", ds != nil, len(rbac))
	}
	return ds, rbac
}

// calicoArg is the value of the DaemonSet's --NAME=VALUE argument.
func calicoArg(t *testing.T, ds *appsv1.DaemonSet, name string) string {
	t.Helper()
	for _, a := range ds.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	t.Fatalf("deploy/calico's DaemonSet has no --%s", name)
	return ""
}

// startCalicoAgent runs the agent in ns with the DaemonSet's arguments,
// $(NODENAME) being node, and a kubeconfig of the ServiceAccount sa whose
// server is a forwarder inside ns to the API server.
func startCalicoAgent(t *testing.T, e *clusterEnv, bin string, ds *appsv1.DaemonSet, sa *rest.Config, ns, node string) *nsAgent {
	t.Helper()
	cfg := rest.CopyConfig(sa)
	cfg.Host = "https://" + forwardIntoNS(t, ns, strings.TrimPrefix(e.kc.Host(), "https://"))
	kubeconfig, err := e.kc.WriteKubeconfig(node, cfg)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{}, ds.Spec.Template.Spec.Containers[0].Args...)
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "$(NODENAME)", node)
	}
	logf, err := os.Create(filepath.Join(t.TempDir(), node+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, bin}, append(args, "--kubeconfig", kubeconfig)...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s in %s: peeragent %s --kubeconfig ...", node, ns, strings.Join(args, " "))
	a := &nsAgent{node: node, ns: ns, out: logf, cmd: cmd, client: nsHTTPClient(ns)}
	stopOnCleanup(t, cmd, node, a.logs)
	return a
}

// forwardIntoNS listens on 127.0.0.1 inside ns and forwards each
// connection to target (an address of the test's own namespace); it
// returns the listening address. Closed by a cleanup.
func forwardIntoNS(t *testing.T, ns, target string) string {
	t.Helper()
	var l net.Listener
	if err := inNS(ns, func() error {
		var err error
		l, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatalf("listen in %s: %v", ns, err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				up, err := net.DialTimeout("tcp", target, 5*time.Second)
				if err != nil {
					return
				}
				defer up.Close()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
				go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
				<-done
			})
		}
	})
	return l.Addr().String()
}

// calWaitLearned waits until the agent has prefix installed via nextHop.
func calWaitLearned(t *testing.T, ctx context.Context, a *nsAgent, prefix, nextHop string) {
	t.Helper()
	waitState(t, ctx, 60*time.Second, a.fetch, fmt.Sprintf("%s: route %s via %s installed", a.node, prefix, nextHop), func(d stateDump) bool {
		r := d.route(prefix)
		return installed(r) && len(r.Via) == 1 && r.Via[0].String() == nextHop
	})
}

// clusterBirdRouteIn waits until BIRD has a route for prefix and returns
// `show route PREFIX all`.
func clusterBirdRouteIn(t *testing.T, ctx context.Context, b *birdtest.Bird, prefix string) string {
	t.Helper()
	var out string
	var err error
	if !clusterPoll(ctx, 60*time.Second, func() bool {
		out, err = b.Exec("show", "route", prefix, "all")
		return err == nil && strings.Contains(out, prefix)
	}) {
		t.Fatalf("BIRD has no route for %s: %s (%v)", prefix, out, err)
	}
	return strings.TrimSpace(out)
}
