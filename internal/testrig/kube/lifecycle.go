package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// Option changes how Start runs the cluster.
type Option func(*options)

type options struct {
	apiserverArgs []string
}

// WithAPIServerArgs appends flags to kube-apiserver's command line (a later
// flag overrides an earlier one), e.g. "--feature-gates=...".
func WithAPIServerArgs(args ...string) Option {
	return func(o *options) { o.apiserverArgs = append(o.apiserverArgs, args...) }
}

// Stop stops kube-apiserver (SIGTERM, then SIGKILL after 15 s) and waits
// for it to exit; etcd keeps running. Clients then see connection refused
// until Restart.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.apiserver.stop()
}

// Restart stops kube-apiserver if it is running and starts it again on the
// same port with the same certificates and etcd, so existing clients and
// their watches reconnect to it; it returns once /readyz is ok.
func (c *Cluster) Restart() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.apiserver.stop(); err != nil {
		return err
	}
	started := time.Now()
	if err := c.runAPIServer(); err != nil {
		return err
	}
	c.t.Logf("kubetest: kube-apiserver restarted, ready in %v", time.Since(started).Round(time.Millisecond))
	return nil
}

// waitHTTP polls url until it answers 200 OK, p exits, or timeout passes.
// cfg, when not nil, gives the TLS client identity.
func waitHTTP(p *proc, url string, cfg *rest.Config, timeout time.Duration) error {
	client := &http.Client{Timeout: 5 * time.Second}
	if cfg != nil {
		rt, err := rest.TransportFor(cfg)
		if err != nil {
			return err
		}
		client.Transport = rt
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := "no answer yet"
	for {
		ok, why := probe(ctx, client, url)
		if ok {
			return nil
		}
		last = why
		select {
		case <-p.run.Done():
			return fmt.Errorf("%v while waiting for %s; last %d lines of its log:\n%s",
				p.exitErr(), url, logTailLines, p.tail(logTailLines))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %v (last: %s); last %d lines of its log:\n%s",
				p.name, timeout, last, logTailLines, p.tail(logTailLines))
		case <-tick.C:
		}
	}
}

// probe GETs url once: ok on 200, else a short reason.
func probe(ctx context.Context, client *http.Client, url string) (ok bool, why string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode == http.StatusOK {
		return true, ""
	}
	return false, fmt.Sprintf("%s: %s", resp.Status, failedChecks(string(body)))
}

// failedChecks picks the "[-]name failed" lines of a /readyz answer, or
// the start of any other body.
func failedChecks(body string) string {
	var failed []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "[-]") {
			failed = append(failed, l)
		}
	}
	if len(failed) == 0 {
		return strings.TrimSpace(body[:min(len(body), 200)])
	}
	return strings.Join(failed, "; ")
}
