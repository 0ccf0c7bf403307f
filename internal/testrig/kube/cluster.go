package kube

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

const (
	// readyTimeout bounds each wait for etcd or kube-apiserver to be ready.
	readyTimeout = 90 * time.Second
	// startTries is how often Start picks new ports when a process cannot
	// start (another process may take a free port between pick and use).
	startTries = 3
	// logTailLines is how much of each log a failed test prints.
	logTailLines = 60
)

// Cluster is a running etcd and kube-apiserver, owned by the test that
// started it. Stop, Restart and the other methods may be called from any
// goroutine; ConfigFor and InstallCRDs fail the test that started the
// cluster, so call them from that test's goroutine.
type Cluster struct {
	t    testing.TB
	dir  string
	pki  *pki
	bins Binaries
	opts options

	etcdURL string
	host    string // https://127.0.0.1:PORT
	etcd    *proc

	mu        sync.Mutex // serializes Stop and Restart
	apiserver *proc
}

// Start runs etcd and kube-apiserver on 127.0.0.1 in a new t.TempDir() and
// returns once kube-apiserver's /readyz is ok (each process gets 90 s). A
// cleanup stops both and, when the test failed, logs the tail of their
// logs. Start calls Require first, so missing binaries skip the test (fail
// it under CI=true).
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	Require(t)
	bins, _ := Find()
	c := &Cluster{t: t, dir: t.TempDir(), bins: bins}
	for _, o := range opts {
		o(&c.opts)
	}
	var err error
	if c.pki, err = newPKI(c.dir); err != nil {
		t.Fatalf("kubetest: certificates: %v", err)
	}
	t.Cleanup(c.cleanup)
	for try := 1; ; try++ {
		if err = c.startAll(); err == nil {
			return c
		}
		if try == startTries {
			t.Fatalf("kubetest: %v", err) // the cleanup logs the output
		}
		t.Logf("kubetest: try %d: %v; retrying with other ports", try, err)
		c.stopAll()
	}
}

func (c *Cluster) startAll() error {
	started := time.Now()
	if err := c.startEtcd(); err != nil {
		return err
	}
	if err := c.startAPIServer(); err != nil {
		return err
	}
	c.t.Logf("kubetest: %s ready in %v (dir %s)", c, time.Since(started).Round(time.Millisecond), c.dir)
	return nil
}

func (c *Cluster) startEtcd() error {
	client, err := freePort()
	if err != nil {
		return err
	}
	peer, err := freePort()
	if err != nil {
		return err
	}
	dataDir := filepath.Join(c.dir, "etcd-data")
	if err := os.RemoveAll(dataDir); err != nil { // left by a failed try, with other ports
		return err
	}
	c.etcdURL = "http://127.0.0.1:" + strconv.Itoa(client)
	c.etcd = &proc{name: "etcd", path: c.bins.Etcd, logFile: filepath.Join(c.dir, "etcd.log"),
		args: etcdArgs(dataDir, c.etcdURL, "http://127.0.0.1:"+strconv.Itoa(peer))}
	if err := c.etcd.start(); err != nil {
		return err
	}
	return waitHTTP(c.etcd, c.etcdURL+"/health", nil, readyTimeout)
}

func (c *Cluster) startAPIServer() error {
	port, err := stablePort()
	if err != nil {
		return err
	}
	c.host = "https://127.0.0.1:" + strconv.Itoa(port)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.apiserver = &proc{name: "kube-apiserver", path: c.bins.APIServer,
		logFile: filepath.Join(c.dir, "kube-apiserver.log"), args: c.apiserverArgs(port)}
	return c.runAPIServer()
}

// runAPIServer starts the kube-apiserver process and waits for /readyz.
func (c *Cluster) runAPIServer() error {
	if err := c.apiserver.start(); err != nil {
		return err
	}
	return waitHTTP(c.apiserver, c.host+"/readyz", c.RESTConfig(), readyTimeout)
}

func etcdArgs(dataDir, clientURL, peerURL string) []string {
	return []string{
		"--name=kubetest", "--data-dir=" + dataDir,
		"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=kubetest=" + peerURL, "--initial-cluster-state=new",
		"--unsafe-no-fsync", "--log-level=warn",
	}
}

func (c *Cluster) apiserverArgs(port int) []string {
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port), "--cert-dir=" + filepath.Join(c.dir, "cert-dir"),
		"--tls-cert-file=" + c.pki.serverCertFile, "--tls-private-key-file=" + c.pki.serverKeyFile,
		"--client-ca-file=" + c.pki.caFile,
		"--authorization-mode=RBAC", "--anonymous-auth=false",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.pki.saPubFile,
		"--service-account-signing-key-file=" + c.pki.saKeyFile,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--endpoint-reconciler-type=none", // no endpoints for 127.0.0.1 on loopback
		"--allow-privileged=true", "--profiling=false",
		// End open watches on shutdown, so Stop and Restart take seconds,
		// not the 60 s request timeout, while clients are watching.
		"--shutdown-watch-termination-grace-period=2s",
	}
	return append(args, c.opts.apiserverArgs...)
}

// RESTConfig is an admin (system:masters) client configuration, a new copy
// on each call, without client-side rate limiting worth noticing.
func (c *Cluster) RESTConfig() *rest.Config {
	return &rest.Config{
		Host: c.host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: c.pki.caCert, CertData: c.pki.adminCert, KeyData: c.pki.adminKey,
		},
		QPS: 1000, Burst: 2000,
	}
}

// Host is kube-apiserver's URL, https://127.0.0.1:PORT; it stays the same
// across Restart.
func (c *Cluster) Host() string { return c.host }

// Dir is the cluster's temporary directory (certificates, etcd data, logs).
func (c *Cluster) Dir() string { return c.dir }

func (c *Cluster) String() string {
	return fmt.Sprintf("kube-apiserver %s at %s, etcd at %s", K8sVersion, c.host, c.etcdURL)
}

// cleanup stops both processes and, when the test failed, logs their tails.
func (c *Cluster) cleanup() {
	c.stopAll()
	if !c.t.Failed() {
		return
	}
	for _, p := range []*proc{c.etcd, c.apiserver} {
		if p != nil {
			c.t.Logf("kubetest: last %d lines of %s:\n%s", logTailLines, p.logFile, p.tail(logTailLines))
		}
	}
}

func (c *Cluster) stopAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range []*proc{c.apiserver, c.etcd} {
		if p == nil {
			continue
		}
		if err := p.stop(); err != nil {
			c.t.Logf("kubetest: %v", err)
		}
	}
}
