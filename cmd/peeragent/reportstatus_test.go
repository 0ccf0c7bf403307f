package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/peeragent/peeragent/watch"
)

// TestStatusReporterWiring: run makes its status reporter over the
// source's one set of clients and resolved group, and none with
// --report-status=false or --from. Nothing answers at the kubeconfig's
// server: nothing talks to it before Run (the reporter against a real API
// server: e2e TestClusterReportsStatus).
func TestStatusReporterWiring(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		reporter bool
	}{
		{"crd-group", []string{"--calico-api-group", watch.GroupCRD}, true},
		{"v3-group", []string{"--calico-api-group", watch.GroupV3}, true},
		{"report-status-off", []string{"--report-status=false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseRunFlags(append([]string{"--node", "node-a", "--kubeconfig", kubeconfig}, tc.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			src, kc, err := newSource(f, discardLog())
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := src.(*watch.Kube); !ok || kc == nil || kc.group != f.group {
				t.Fatalf("newSource = %T, clients %+v: want a *watch.Kube and clients of group %s", src, kc, f.group)
			}
			rep, err := newStatusReporter(f, kc, discardLog())
			if err != nil || (rep != nil) != tc.reporter {
				t.Fatalf("newStatusReporter = %v, %v; want one: %v", rep, err, tc.reporter)
			}
			if rep != nil {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				rep.Run(ctx) // returns at once, and stops the Event broadcaster
			}
		})
	}
	f, err := parseRunFlags([]string{"--node", "node-a", "--from", t.TempDir()}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, kc, err := newSource(f, discardLog()); err != nil || kc != nil {
		t.Fatalf("--from: clients %+v, %v; want none", kc, err)
	} else if rep, err := newStatusReporter(f, kc, discardLog()); rep != nil || err != nil {
		t.Fatalf("--from: reporter %v, %v; want none", rep, err)
	}
}
