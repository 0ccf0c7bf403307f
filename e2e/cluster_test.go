package e2e

import (
	"path/filepath"
	"time"

	"github.com/peeragent/peeragent/state"
)

// The cluster tests (with the "Secret read refused" and "API server
// unavailable" faults): the agent's Kubernetes
// source (watch.Kube) and its real Loop against a real kube-apiserver and
// etcd (internal/testrig/kube), with the CRDs of deploy/crds installed. Each
// test changes objects through the API server and waits, with a bound,
// until the agent's State (neighbors, session phases, problems) and, where
// the real GoBGP executor runs, GoBGP's own neighbor list (ListPeer) show
// the change; the speaker effects each change caused are counted by a
// wrapper round the executor.
//
// The real GoBGP executor listens on 127.0.0.1 only, on a free port given by
// the BGPConfiguration; every neighbor is on 127.0.0.0/8, where nothing
// answers, so no session is established and nothing leaves the machine.

const (
	clusterNS      = state.DefaultNamespace // Calico/VPP's: the agent's secrets namespace, as in deploy/
	clusterAgentNS = "peeragent"            // deploy/base/namespace.yaml: where the agent runs
	clusterSA      = "peeragent"            // deploy/serviceaccount.yaml
	clusterNode    = "node-a"               // the node the agent runs on
	clusterAddr    = "127.0.0.1"
	clusterDeploy  = "../deploy"
	clusterKey     = "password"
	// clusterGrantedSecret is the Secret name deploy/base/rbac.yaml's Role
	// grants (resourceNames), example-bgppeer.yaml's.
	clusterGrantedSecret = "bgp-passwords"
	clusterWaitMax       = 30 * time.Second // one wait for the agent to follow
	clusterMarker        = "test/cluster-settle"
	clusterOutageOf      = 3 * time.Second // how long the API server stays down
)

var (
	clusterCRDs   = filepath.Join(clusterDeploy, "crds")
	clusterCRDsV3 = filepath.Join(clusterDeploy, "crds", "v3")
)
